package sysmem

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParsers(t *testing.T) {
	dir := t.TempDir()
	mi := filepath.Join(dir, "meminfo")
	os.WriteFile(mi, []byte("MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   20000000 kB\n"), 0o644)
	if got := memAvailable(mi); got != 20000000*1024 {
		t.Errorf("MemAvailable %d", got)
	}
	mx, cur := filepath.Join(dir, "max"), filepath.Join(dir, "cur")
	os.WriteFile(mx, []byte("1073741824\n"), 0o644)
	os.WriteFile(cur, []byte("73741824\n"), 0o644)
	if got := cgroupLimit(mx, cur); got != 1000000000 {
		t.Errorf("cgroup %d", got)
	}
	os.WriteFile(mx, []byte("max\n"), 0o644)
	if got := cgroupLimit(mx, cur); got != 0 {
		t.Errorf("unlimited cgroup %d", got)
	}
	if memAvailable(filepath.Join(dir, "none")) != 0 {
		t.Error("missing file")
	}
	if Available() < 0 {
		t.Error("negative")
	}
}
