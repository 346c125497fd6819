package job

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/ivl"
	"github.com/traceaudit/traceaudit/timeline"
)

// instance is one collective instance matched across ranks: ops[i] is the
// record of the rank at position i, nil where that rank has none.
type instance struct {
	ops   []*audit.Collective
	first int // position of the first rank that has it
	// step keys the step that launched it, the same on every rank.
	step int
}

// present counts the ranks that have the instance.
func (in *instance) present() int {
	n := 0
	for _, o := range in.ops {
		if o != nil {
			n++
		}
	}
	return n
}

// match pairs the ranks' collectives: by sequence number on their group
// when every collective records one, else by position on their group
// within the step that launched them (steps keyed by their ProfilerStep
// number when every rank's steps are numbered, else by their order). A
// rank whose record differs in kind or size from the first rank's is left
// out of that instance. Only instances on two ranks or more are kept,
// ordered by the first rank's arrival.
func match(ranks []*Rank) (inst []*instance, bySeq bool) {
	useSeq, numbered := true, allNumbered(ranks)
	for _, r := range ranks {
		for i := range r.Collectives {
			if r.Collectives[i].Seq == nil {
				useSeq = false
			}
		}
	}
	byKey := map[string]*instance{}
	var order []string
	for pos, r := range ranks {
		for i := range r.Collectives {
			c := &r.Collectives[i]
			var key string
			step := stepKey(r, c.Step, numbered)
			switch {
			case useSeq:
				key = "seq|" + c.Group + "|" + strconv.FormatInt(*c.Seq, 10)
			default:
				key = fmt.Sprintf("step|%d|%s|%d", step, c.Group, c.Order)
			}
			in := byKey[key]
			if in == nil {
				in = &instance{ops: make([]*audit.Collective, len(ranks)), first: pos, step: step}
				byKey[key] = in
				order = append(order, key)
			}
			ref := in.ops[in.first]
			if ref != nil && ref != c && !sameCollective(ref, c) {
				continue
			}
			if in.ops[pos] == nil {
				in.ops[pos] = c
			}
		}
	}
	out := make([]*instance, 0, len(order))
	for _, k := range order {
		if in := byKey[k]; in.present() >= 2 {
			out = append(out, in)
		}
	}
	slices.SortStableFunc(out, func(a, b *instance) int {
		return cmp.Compare(a.ops[a.first].ArrivalNS, b.ops[b.first].ArrivalNS)
	})
	return out, useSeq
}

// allNumbered reports whether every step of every rank is a numbered
// ProfilerStep#N.
func allNumbered(ranks []*Rank) bool {
	for _, r := range ranks {
		for _, s := range r.Steps.PerStep {
			if _, ok := stepNumber(s.Name); !ok {
				return false
			}
		}
	}
	return true
}

// stepKey identifies step k of r across ranks: its ProfilerStep number
// when every step is numbered, else its position.
func stepKey(r *Rank, k int, numbered bool) int {
	if n, ok := stepNumber(stepName(r.Analysis, k)); numbered && ok {
		return n
	}
	return k
}

// sameCollective reports whether two ranks' records can be one instance:
// the same kind of collective, and the same size where both know it.
func sameCollective(a, b *audit.Collective) bool {
	if timeline.NormOp(a.Name) != timeline.NormOp(b.Name) {
		return false
	}
	return a.Bytes == 0 || b.Bytes == 0 || a.Bytes == b.Bytes
}

// stepNumber reads N from "ProfilerStep#N".
func stepNumber(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, timeline.ProfilerStepPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil
}

func stepName(r *audit.Analysis, k int) string {
	if k >= 0 && k < len(r.Steps.PerStep) {
		return r.Steps.PerStep[k].Name
	}
	return ""
}

// symmetric reports whether every rank of a collective leaves it when the
// last one arrives (all-reduce, all-gather, reduce-scatter, all-to-all),
// so that their ends coincide on one clock. A broadcast's root, a sender,
// may leave first.
func symmetric(name string) bool {
	switch timeline.NormOp(name) {
	case "allreduce", "allgather", "reducescatter", "alltoall", "barrier":
		return true
	}
	return false
}

// align puts the ranks on the first rank's clock. Ranks read from one file
// (one nsys export) share its clock. For the others, the offset is the one
// under which most of their symmetric collectives end within EndTolerance
// of one of the first rank's (the candidates: no shift, and the end
// differences of the instances matched by order), applied when it exceeds
// AlignTolerance (ranks on one host share a clock, and their ends agree
// within microseconds). It returns "shared" or "aligned".
func align(ranks []*Rank, inst []*instance) string {
	offsets := map[string]int64{ranks[0].File: 0}
	ref := symmetricEnds(ranks[0])
	shifted := false
	for pos := 1; pos < len(ranks); pos++ {
		r := ranks[pos]
		off, ok := offsets[r.File]
		if !ok {
			cands := []int64{0}
			for _, in := range inst {
				a, b := in.ops[0], in.ops[pos]
				if a != nil && b != nil && symmetric(a.Name) {
					cands = append(cands, a.EndNS-b.EndNS)
				}
			}
			off = bestOffset(ref, sample(symmetricEnds(r), maxScored), sample(cands, maxCandidates))
			if off <= AlignTolerance && off >= -AlignTolerance {
				off = 0
			}
			offsets[r.File] = off
		}
		if off == 0 {
			continue
		}
		shifted = true
		r.ClockOffsetNS = off
		for i := range r.Collectives {
			c := &r.Collectives[i]
			c.ArrivalNS += off
			c.EndNS += off
			for k := range c.Exposed {
				c.Exposed[k][0] += off
				c.Exposed[k][1] += off
			}
		}
	}
	if shifted {
		return "aligned"
	}
	return "shared"
}

// Matching by time.
const (
	// EndTolerance: on one clock, the ranks of a symmetric collective
	// leave it within this of each other.
	EndTolerance = 100_000
	// maxCandidates bounds the clock offsets tried per rank, maxScored the
	// ends each is scored on: aligning a rank costs at most 64 × 256
	// binary searches, whatever its trace holds.
	maxCandidates = 64
	maxScored     = 256
)

// symmetricEnds are the sorted ends of r's symmetric collectives.
func symmetricEnds(r *Rank) []int64 {
	var e []int64
	for i := range r.Collectives {
		if c := &r.Collectives[i]; symmetric(c.Name) {
			e = append(e, c.EndNS)
		}
	}
	slices.Sort(e)
	return e
}

// bestOffset is the candidate offset under which most of ends, shifted,
// fall within EndTolerance of one of ref (ties: the smallest shift).
func bestOffset(ref, ends, cands []int64) int64 {
	best, bestN := int64(0), -1
	for _, off := range cands {
		n := 0
		for _, e := range ends {
			if near(ref, e+off) {
				n++
			}
		}
		if n > bestN || n == bestN && abs(off) < abs(best) {
			best, bestN = off, n
		}
	}
	return best
}

// near reports whether sorted v holds a value within EndTolerance of t.
func near(v []int64, t int64) bool {
	i, _ := slices.BinarySearch(v, t)
	return i < len(v) && v[i]-t <= EndTolerance || i > 0 && t-v[i-1] <= EndTolerance
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// sample keeps at most n of v, evenly spaced (the first always).
func sample(v []int64, n int) []int64 {
	if len(v) <= n {
		return v
	}
	out := make([]int64, 0, n)
	for i := range n {
		out = append(out, v[i*len(v)/n])
	}
	return out
}

// rematch replaces the instances of symmetric collectives, once the ranks
// are on one clock, by matching ends: each rank's symmetric collective
// joins the first rank's one of the same kind (and group and size, where
// both know them) that ends within EndTolerance of it, one to one in end
// order. Order on the communicator can slip when the ranks' traces start
// at different steps; the ends of one instance coincide. Instances of
// other collectives (a broadcast's root leaves first) keep their order
// matching.
func rematch(ranks []*Rank, inst []*instance) []*instance {
	numbered := allNumbered(ranks)
	var out []*instance
	for _, in := range inst {
		if !symmetric(in.ops[in.first].Name) {
			out = append(out, in)
		}
	}
	type ref struct {
		c  *audit.Collective
		in *instance
	}
	var refs []ref
	for i := range ranks[0].Collectives {
		if c := &ranks[0].Collectives[i]; symmetric(c.Name) {
			refs = append(refs, ref{c: c})
		}
	}
	slices.SortStableFunc(refs, func(a, b ref) int { return cmp.Compare(a.c.EndNS, b.c.EndNS) })
	for pos := 1; pos < len(ranks); pos++ {
		var cs []*audit.Collective
		for i := range ranks[pos].Collectives {
			if c := &ranks[pos].Collectives[i]; symmetric(c.Name) {
				cs = append(cs, c)
			}
		}
		slices.SortStableFunc(cs, func(a, b *audit.Collective) int { return cmp.Compare(a.EndNS, b.EndNS) })
		j := 0
		for _, c := range cs {
			for j < len(refs) && refs[j].c.EndNS < c.EndNS-EndTolerance {
				j++
			}
			for k := j; k < len(refs) && refs[k].c.EndNS <= c.EndNS+EndTolerance; k++ {
				r := &refs[k]
				if r.in != nil && r.in.ops[pos] != nil || !sameCollective(r.c, c) || !sameGroup(r.c, c) {
					continue
				}
				if r.in == nil {
					r.in = &instance{ops: make([]*audit.Collective, len(ranks)), first: 0, step: stepKey(ranks[0], r.c.Step, numbered)}
					r.in.ops[0] = r.c
				}
				r.in.ops[pos] = c
				break
			}
		}
	}
	for _, r := range refs {
		if r.in != nil {
			out = append(out, r.in)
		}
	}
	slices.SortStableFunc(out, func(a, b *instance) int {
		return cmp.Compare(a.ops[a.first].ArrivalNS, b.ops[b.first].ArrivalNS)
	})
	return out
}

// sameGroup reports whether two records can be on one communicator.
func sameGroup(a, b *audit.Collective) bool {
	return a.Group == "" || b.Group == "" || a.Group == b.Group
}

// totals are the waits of every rank, measured across ranks.
type totals struct {
	// own[i] is rank i's wait for its peers within its steady steps.
	own []int64
	// byLast[s][i] is the part of own[i] spent waiting for rank s, when s
	// arrived last.
	byLast [][]int64
	// last[s] counts the instances where rank s arrived last.
	last []int
	// steps holds the waits of each step (by instance step key) that is
	// steady on the rank that first launched its collectives.
	steps map[int]*stepWaits
	// waits[i] are rank i's waits, per instance, for evidence.
	waits [][]wait
	// lags[s] are the instances where s arrived last, for evidence.
	lags [][]lag
}

// stepWaits are the waits of one step: byLast[s][i] is rank i's wait for
// rank s, when s arrived last; own[i] all of rank i's wait.
type stepWaits struct {
	byLast [][]int64
	own    []int64
}

// net is, in this step, the mean wait of the other ranks for rank s minus
// s's own wait for them: jitter that makes each rank wait in turn cancels
// out.
func (sw *stepWaits) net(s int) int64 {
	n := len(sw.own)
	if n < 2 {
		return 0
	}
	var sum int64
	for i := range n {
		if i != s {
			sum += sw.byLast[s][i]
		}
	}
	return sum/int64(n-1) - sw.own[s]
}

// wait is one rank's wait at one instance, on the job's clock.
type wait struct {
	c        *audit.Collective
	from, to int64 // [arrival, the last arrival or its end)
	ns       int64 // exposed part within steady steps
	lastRank int
}

// lag is how late the last rank came to one instance.
type lag struct {
	c         *audit.Collective
	first     int64 // the earliest arrival
	firstRank int
	maxWait   int64 // the longest wait it caused
}

// waits measures, for every instance, each rank's wait: from its arrival
// to the last arrival (or its own end, if sooner), the part with no compute
// kernel running inside its steady steps.
func waits(ranks []*Rank, inst []*instance) *totals {
	n := len(ranks)
	t := &totals{own: make([]int64, n), byLast: make([][]int64, n), last: make([]int, n), waits: make([][]wait, n), lags: make([][]lag, n),
		steps: map[int]*stepWaits{}}
	for i := range t.byLast {
		t.byLast[i] = make([]int64, n)
	}
	steady := make([]ivl.Set, n)
	for i, r := range ranks {
		var ivs []ivl.Interval
		for k, s := range r.Steps.PerStep {
			if steadyStep(r.Analysis, k) {
				ivs = append(ivs, ivl.Interval{Start: s.StartNS + r.ClockOffsetNS, End: s.EndNS + r.ClockOffsetNS})
			}
		}
		steady[i] = ivl.Union(ivs)
	}
	for _, in := range inst {
		last, lastAt := -1, int64(0)
		first, firstAt := -1, int64(0)
		for pos, c := range in.ops {
			if c == nil {
				continue
			}
			if last < 0 || c.ArrivalNS > lastAt {
				last, lastAt = pos, c.ArrivalNS
			}
			if first < 0 || c.ArrivalNS < firstAt {
				first, firstAt = pos, c.ArrivalNS
			}
		}
		t.last[last]++
		var sw *stepWaits
		if f := in.ops[in.first]; steadyStep(ranks[in.first].Analysis, f.Step) {
			if sw = t.steps[in.step]; sw == nil {
				sw = &stepWaits{byLast: make([][]int64, n), own: make([]int64, n)}
				for i := range sw.byLast {
					sw.byLast[i] = make([]int64, n)
				}
				t.steps[in.step] = sw
			}
		}
		worst := int64(0)
		for pos, c := range in.ops {
			if c == nil || pos == last {
				continue
			}
			to := min(lastAt, c.EndNS)
			if to <= c.ArrivalNS {
				continue
			}
			exposed := make([]ivl.Interval, len(c.Exposed))
			for k, e := range c.Exposed {
				exposed[k] = ivl.Interval{Start: e[0], End: e[1]}
			}
			ns := ivl.Union(exposed).Intersect(steady[pos]).Covered(c.ArrivalNS, to)
			t.own[pos] += ns
			t.byLast[last][pos] += ns
			if sw != nil {
				sw.own[pos] += ns
				sw.byLast[last][pos] += ns
			}
			worst = max(worst, ns)
			if ns > 0 {
				t.waits[pos] = append(t.waits[pos], wait{c: c, from: c.ArrivalNS, to: to, ns: ns, lastRank: *ranks[last].Rank})
			}
		}
		if worst > 0 {
			t.lags[last] = append(t.lags[last], lag{c: in.ops[last], first: firstAt, firstRank: *ranks[first].Rank, maxWait: worst})
		}
	}
	return t
}
