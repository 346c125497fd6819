package chrome

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/traceaudit/traceaudit/timeline"
)

// Communication metadata: since 2024, Kineto writes on NCCL kernels the
// collective they run ("Collective name", "In msg nelems", "Out msg
// nelems", "Group size", "dtype", "Process Group Name"), and at the top
// level the job the trace belongs to (distributedInfo: rank, world_size,
// backend).

// readCollective reads the collective arguments of communication kernel
// idx, if it has them, into the chunk's collective list.
func (w *worker) readCollective(idx int, corr int64) error {
	var (
		c          = timeline.Collective{Seq: -1}
		in, out    int64
		found      bool
		err        error
		groupSizes int64
	)
	lerr := w.eachArg(idx, func(key []byte, v value) bool {
		str := func() string {
			if v.kind == kString {
				return strings.Clone(view(v.text(w.b)))
			}
			return ""
		}
		switch view(key) {
		case "Collective name":
			c.Op, found = str(), true
		case "In msg nelems":
			in, err = w.intArg(v, idx, "In msg nelems")
		case "Out msg nelems":
			out, err = w.intArg(v, idx, "Out msg nelems")
		case "Group size":
			groupSizes, err = w.intArg(v, idx, "Group size")
		case "dtype":
			c.DType = str()
		case "Process Group Name":
			c.Group = str()
		case "Seq", "seq":
			c.Seq, err = w.intArg(v, idx, string(key))
		}
		return err == nil
	})
	if lerr != nil {
		return lerr
	}
	if err != nil {
		return err
	}
	if !found || c.Op == "" {
		return nil
	}
	if in < 0 || out < 0 || groupSizes < 0 || groupSizes > 1<<24 {
		return w.fieldErr(idx, "args", "negative or out-of-range collective size")
	}
	c.GroupSize = int(groupSizes)
	if es := dtypeSize(c.DType); es > 0 && max(in, out) <= timeline.MaxTime/es {
		c.Bytes = max(in, out) * es
	}
	w.res.colls = append(w.res.colls, corrColl{corr: corr, c: c})
	return nil
}

// dtypeSize is the size in bytes of a PyTorch scalar type as Kineto names
// it, 0 when unknown.
func dtypeSize(dtype string) int64 {
	switch dtype {
	case "Double", "Long", "ComplexFloat", "UInt64":
		return 8
	case "Float", "Int", "UInt32", "ComplexHalf":
		return 4
	case "Half", "BFloat16", "Short", "UInt16":
		return 2
	case "Byte", "Char", "Bool":
		return 1
	case "ComplexDouble":
		return 16
	}
	if strings.HasPrefix(dtype, "Float8") {
		return 1
	}
	return 0
}

// distributed reads distributedInfo: {"rank", "world_size", "backend"}.
// A malformed object (not an object, no numeric rank, a rank outside the
// world size) only loses the information: it is optional metadata.
func (p *parser) distributed() timeline.Distributed {
	raw := p.top["distributedInfo"]
	if raw == nil || !gjson.ValidBytes(raw) {
		return timeline.Distributed{}
	}
	v := gjson.ParseBytes(raw)
	if !v.IsObject() {
		return timeline.Distributed{}
	}
	rank, ws := v.Get("rank"), v.Get("world_size")
	if rank.Type != gjson.Number {
		return timeline.Distributed{}
	}
	d := timeline.Distributed{Known: true, Rank: int(rank.Int()), Backend: v.Get("backend").Str}
	if ws.Type == gjson.Number {
		d.WorldSize = int(ws.Int())
	}
	if rank.Float() != float64(d.Rank) || d.Rank < 0 || d.WorldSize < 0 || d.WorldSize > 1<<24 || (d.WorldSize > 0 && d.Rank >= d.WorldSize) {
		return timeline.Distributed{}
	}
	return d
}
