package index

import (
	"encoding/json"
	"fmt"
)

// breakdownJSON is a Breakdown as the analyze JSON contract writes it
// (steps.breakdown_ns, per_step[].breakdown_ns): one member per bucket, in
// bucket order. The names and their order are a public interface.
type breakdownJSON struct {
	Compute int64 `json:"compute"`
	// Comm is collective communication with no compute kernel beside it.
	Comm  int64 `json:"comm"`
	Copy  int64 `json:"copy"`
	Sync  int64 `json:"sync"`
	OS    int64 `json:"os"`
	Data  int64 `json:"data"`
	Other int64 `json:"other"`
}

func (b Breakdown) toJSON() breakdownJSON {
	return breakdownJSON{Compute: b[Compute], Comm: b[Comm], Copy: b[Copy], Sync: b[Sync], OS: b[OS], Data: b[Data], Other: b[Other]}
}

func (j breakdownJSON) breakdown() Breakdown {
	var b Breakdown
	b[Compute], b[Comm], b[Copy], b[Sync] = j.Compute, j.Comm, j.Copy, j.Sync
	b[OS], b[Data], b[Other] = j.OS, j.Data, j.Other
	return b
}

// MarshalJSON writes b as an object of nanoseconds per bucket, named as
// Bucket.String names them: {"compute", "comm", "copy", "sync", "os",
// "data", "other"}.
func (b Breakdown) MarshalJSON() ([]byte, error) { return json.Marshal(b.toJSON()) }

// UnmarshalJSON reads what MarshalJSON writes; absent buckets keep their
// value, unknown members are ignored.
func (b *Breakdown) UnmarshalJSON(data []byte) error {
	j := b.toJSON()
	if err := json.Unmarshal(data, &j); err != nil {
		return fmt.Errorf("breakdown_ns: %w", err)
	}
	*b = j.breakdown()
	return nil
}
