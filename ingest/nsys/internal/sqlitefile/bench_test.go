package sqlitefile

import (
	"math"
	"os"
	"testing"
)

// BenchmarkScanRuntime scans the runtime table of the bench export
// (bench/out, made by make bench), decoding the columns nsys reads.
func BenchmarkScanRuntime(b *testing.B) {
	path := "../../../../bench/out/nsys-2M-rows-x260.sqlite"
	if _, err := os.Stat(path); err != nil {
		b.Skip("no bench export (run make bench first)")
	}
	f, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for b.Loop() {
		c := f.Scan(9, math.MinInt64, math.MaxInt64, 6)
		n := 0
		var sum int64
		for c.Next() {
			n++
			for k := 0; k < 6; k++ {
				if c.Type(k) == Integer {
					sum += c.Int(k)
				}
			}
		}
		if c.Err() != nil || n != 1291160 {
			b.Fatal(n, c.Err())
		}
	}
}
