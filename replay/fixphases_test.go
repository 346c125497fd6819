package replay

import (
	"slices"
	"testing"
	"time"

	"github.com/traceaudit/traceaudit/analyze/model"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

// TestPackCopiesVariant: the observed loop makes each small copy from
// pageable memory and waits for it; pack-copies makes one pinned copy of
// them all a step, waited for by no one.
func TestPackCopiesVariant(t *testing.T) {
	p := tiny(BatchesMain)
	p.Step.SmallCopies = &SmallCopies{Count: 50, Bytes: 2048, GapNS: 1_000}
	const steps = 4
	f, _ := runVariant(t, p, Observed, steps)
	small := func(f *Fake, pinned bool) (n int) {
		for _, o := range f.Ops {
			if o.Kind == "htod" && o.Pinned == pinned && (o.Bytes == 2048 || o.Bytes == 50*2048) {
				n++
			}
		}
		return n
	}
	if n := small(f, false); n != 50*(steps+1) {
		t.Errorf("observed: %d small pageable copies, want %d", n, 50*(steps+1))
	}
	syncs := f.Count("sync", nil)
	f, _ = runVariant(t, p, PackCopies, steps)
	if n, m := small(f, false), small(f, true); n != 0 || m != steps+1 {
		t.Errorf("pack-copies: %d pageable and %d pinned small copies, want 0 and %d", n, m, steps+1)
	}
	if got := f.Count("sync", nil); syncs-got != 50*(steps+1) {
		t.Errorf("pack-copies waits %d times, observed %d: want one wait less per copy", got, syncs)
	}
	if a, fr := f.Count("alloc-pinned", nil), f.Count("free-pinned", nil); a != PackSlots || fr != a {
		t.Errorf("%d pinned buffers allocated, %d freed, want %d", a, fr, PackSlots)
	}
}

// TestPersistentWorkersVariant: the observed loop waits for the loader's
// restart at the first step of every epoch, whole epochs measured; with
// persistent workers it never does.
func TestPersistentWorkersVariant(t *testing.T) {
	p := tiny(BatchesWorkers)
	p.Step.Restart = &Restart{EverySteps: 3, StallNS: int64(time.Millisecond)}
	restarts := func(name string) (steps int, at []int) {
		if name != Observed {
			if err := p.Select(name); err != nil {
				t.Fatal(err)
			}
		}
		r, err := newRig(newFake(), p)
		if err != nil {
			t.Fatal(err)
		}
		r.hooks.restart = func(k int) { at = append(at, k) }
		v := p.Variants[len(p.Variants)-1]
		wall, _, err := r.measure(t.Context(), v.Plan, Options{Steps: 4, Warmup: 1}, func() {})
		if err != nil {
			t.Fatal(err)
		}
		return len(wall), at
	}
	// Four steps asked: two whole epochs of three measured, each started
	// by a restart (the warm-up step is not one).
	if n, at := restarts(Observed); n != 6 || !slices.Equal(at, []int{1, 4}) {
		t.Errorf("observed: %d steps measured, restarts at steps %v, want 6 and [1 4]", n, at)
	}
	if n, at := restarts(PersistentWorkers); n != 4 || len(at) != 0 {
		t.Errorf("persistent-workers: %d steps measured, restarts at steps %v, want 4 and none", n, at)
	}
}

// TestPersistentWorkersWait: with workers kept that kept up between
// restarts, the main thread's wait per step is the shortest between them;
// the observed loop keeps the traced wait.
func TestPersistentWorkersWait(t *testing.T) {
	p := tiny(BatchesWorkers)
	p.Step.Restart = &Restart{EverySteps: 3, StallNS: int64(time.Millisecond), WarmNS: 20_000}
	r, err := newRig(newFake(), p)
	if err != nil {
		t.Fatal(err)
	}
	obs := &loop{r: r, s: observedSetup(p)}
	kept := &loop{r: r, s: fixVariant(PersistentWorkers, p).Plan}
	if o, k := obs.observedWait(), kept.observedWait(); o != time.Duration(p.Step.DataNS) || k != 20*time.Microsecond {
		t.Errorf("observed wait %v, with workers kept %v: want %v and 20µs", o, k, time.Duration(p.Step.DataNS))
	}
}

// TestKeepCacheVariant: the observed loop allocates and frees the step's
// device memory each step, as long as the trace's calls took at least;
// keep-cache allocates nothing in the loop.
func TestKeepCacheVariant(t *testing.T) {
	p := tiny(BatchesMain)
	p.Step.Churn = &Churn{Allocs: 6, IdleNS: 2_000_000}
	const steps = 4
	count := func(f *Fake, kind string) (n int) {
		for _, o := range f.Ops {
			if o.Kind == kind && o.Bytes == ChurnBytes {
				n++
			}
		}
		return n
	}
	f, _ := runVariant(t, p, Observed, steps)
	if a, fr := count(f, "alloc-device"), count(f, "free-device"); a != 6*(steps+1) || fr != a {
		t.Errorf("observed: %d allocations, %d frees, want %d each", a, fr, 6*(steps+1))
	}
	f, _ = runVariant(t, p, KeepCache, steps)
	if a, fr := count(f, "alloc-device"), count(f, "free-device"); a != 0 || fr != 0 {
		t.Errorf("keep-cache: %d allocations, %d frees in the loop", a, fr)
	}
}

// TestFixPhasesPlannedFromFindings: the three fixes' phases come from
// their findings in real traces, with a variant each named for the
// finding, and their time leaves the host phase that held it.
func TestFixPhasesPlannedFromFindings(t *testing.T) {
	for _, c := range []struct {
		file, variant, finding string
		check                  func(st *Phases) bool
	}{
		{"many-features", PackCopies, "sync-api", func(st *Phases) bool {
			return st.SmallCopies != nil && st.SmallCopies.Count >= 150 && st.SmallCopies.Bytes == 2048
		}},
		{"respawn-workers", PersistentWorkers, "dataloader-wait", func(st *Phases) bool {
			return st.Restart != nil && st.Restart.EverySteps == 6 && st.Restart.StallNS > 100_000_000 && st.DataNS < 20_000_000 &&
				st.Restart.WarmNS > 0 && st.Restart.WarmNS < 1_000_000
		}},
		{"alloc-churn", KeepCache, "alloc-churn", func(st *Phases) bool {
			return st.Churn != nil && st.Churn.Allocs > 0 && st.Churn.IdleNS > 0
		}},
	} {
		p := planOf(t, stepModelTrace(c.file))
		if !c.check(&p.Step) {
			t.Errorf("%s: step %+v", c.file, p.Step)
		}
		var v *Variant
		for i := range p.Variants {
			if p.Variants[i].Name == c.variant {
				v = &p.Variants[i]
			}
		}
		if v == nil || v.FixFor == nil || *v.FixFor != c.finding || v.ModelStepNS <= 0 {
			t.Errorf("%s: variants %v, want %s fixing %s with the model's step", c.file, names(p), c.variant, c.finding)
		}
	}
	// Metrics computed on the host from logits read back each step: most
	// of the other phase is that work, which no-sync defers.
	p := planOf(t, stepModelTrace("host-metrics"))
	if st := p.Step; st.ReadWorkNS < st.OtherNS/2 || st.ReadWorkNS > st.OtherNS {
		t.Errorf("host-metrics: read work %d of %d ns other host work", st.ReadWorkNS, st.OtherNS)
	}
	if v := fixVariant(NoSync, p); !v.Plan.DeferReads || observedSetup(p).DeferReads {
		t.Errorf("no-sync %+v: want the reads deferred there and only there", v.Plan)
	}
	// A loop with none of them plans none.
	p = planOf(t, stepModelTrace("text-workers"))
	if st := p.Step; st.SmallCopies != nil || st.Restart != nil || st.Churn != nil || st.ReadWorkNS != 0 {
		t.Errorf("text-workers: %+v", st)
	}
}

// TestCacheDataPlannedFromReads: the file reads of a loop that reads its
// HDF5 data set off the disk on the main thread (fixtures/storage) are a
// phase of the replay's step, in the other phase's host time; cache-data,
// fixing storage-read, serves each at memory speed, as the step model
// does, and its predicted speedup is the model's.
func TestCacheDataPlannedFromReads(t *testing.T) {
	p := planOf(t, testfix.Project("storage/s0_cold.nsys.sqlite"))
	rd := p.Step.Reads
	if rd == nil || rd.PerStep != 36 || rd.OtherNS < 5_000_000 || rd.OtherNS > p.Step.OtherNS || rd.CachedNS != model.CachedReadNS(4_817_152/36) {
		t.Fatalf("reads %+v (other phase %d ns): want 36 a step, 5 ms or more of the other phase, each from memory as the model has it", rd, p.Step.OtherNS)
	}
	// Most reads wait on the disk (643 of the trace's 720 take 100 µs or
	// more); each also spares the host the slower work after it.
	if rd.DiskPerStep < 28 || rd.DiskPerStep > rd.PerStep {
		t.Errorf("%d disk reads a step of %d: want most", rd.DiskPerStep, rd.PerStep)
	}
	want := rd.OtherNS - int64(rd.PerStep)*rd.CachedNS + int64(rd.DiskPerStep)*model.WakeNS
	if s := rd.savedNS(); s != want || s < 4_000_000 || s > p.Step.OtherNS {
		t.Errorf("cache-data saves %d ns of the other phase's %d ns: want %d, the reads at memory speed and a wake each off the disk", s, p.Step.OtherNS, want)
	}
	var v *Variant
	for i := range p.Variants {
		if p.Variants[i].Name == CacheData {
			v = &p.Variants[i]
		}
	}
	if v == nil || v.FixFor == nil || *v.FixFor != "storage-read" || !v.Plan.CacheData || v.PredictedSpeedup < 1.3 {
		t.Fatalf("variants %v: want cache-data fixing storage-read, predicting the model's gain", names(p))
	}
}

// TestFewerCollectivesPlanned: DDP with 1 MB buckets (fixtures/k0): the
// host time that issuing 384 all-reduces a step costs beyond 16 of 25 MiB
// is a phase the variant leaves out, with the model's prediction.
func TestFewerCollectivesPlanned(t *testing.T) {
	p := planOf(t, testfix.Project("k0_ddp_bucket1mb.rank0.pt.trace.json.gz"))
	if p.Step.IssueSavedNS < 10_000_000 || p.Step.IssueSavedNS > p.ObservedStepMeanNS/2 {
		t.Errorf("issue time saved %d ns of a %d ns step", p.Step.IssueSavedNS, p.ObservedStepMeanNS)
	}
	for _, v := range p.Variants {
		if v.Name == FewerCollectives {
			if v.FixFor == nil || *v.FixFor != "comm-small" || !v.Plan.FewerCollectives || v.PredictedSpeedup < 1.1 || v.ModelStepNS <= 0 {
				t.Errorf("fewer-collectives %+v", v)
			}
			return
		}
	}
	t.Fatalf("variants %v: want fewer-collectives", names(p))
}
