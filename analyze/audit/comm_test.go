package audit

import (
	"fmt"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/passes/commwait"
	"github.com/traceaudit/traceaudit/timeline"
	tt "github.com/traceaudit/traceaudit/timeline/timelinetest"
)

// commBound builds 5 ProfilerSteps of 100 ms: 40 ms of compute, then an
// all-reduce of 64 MB launched at 40 ms. In step 0 it runs 5 ms (moving
// data); in the others 50 ms (waiting 45 ms for a late peer), with no
// compute beside it.
func commBound() *tt.Builder {
	b := tt.New()
	h := b.Thread(1, 1, "python")
	s, nccl := b.Stream(0, 7), b.Stream(0, 20)
	for i := range 5 {
		t0 := int64(i) * 100 * ms
		b.Range(h, fmt.Sprintf("ProfilerStep#%d", i), t0, t0+100*ms)
		for k := range 4 {
			ks := t0 + int64(k)*10*ms
			b.Launch(h, s, "gemm", ks, ks+5*us, ks+10*us, ks+10*ms)
		}
		run := 50 * ms
		if i == 0 {
			run = 5 * ms
		}
		b.Collective(h, nccl, timeline.Collective{Op: "allreduce", Bytes: 64 << 20, Group: "0", GroupSize: 2, DType: "Float", Seq: -1},
			t0+39*ms, t0+39*ms+10*us, t0+40*ms+10*us, t0+40*ms+10*us+run)
	}
	return b
}

func TestCommunicationBound(t *testing.T) {
	r := run(t, commBound().Build(t))
	b := r.Steps.BreakdownNS
	// Compute 4 kernels of 10 ms less 10 µs each; comm (5 + 4 × 50) / 5 ms.
	if b[index.Compute] != 40*ms-40*us || b[index.Comm] != 41*ms {
		t.Errorf("breakdown %+v", b)
	}
	if !strings.HasPrefix(r.Verdict, "communication-bound: 41 %") {
		t.Errorf("verdict %q", r.Verdict)
	}
	near(t, "compute busy share", r.GPU.ComputeBusyShare, 0.3996, 1e-4)
	near(t, "comm busy share", r.GPU.CommBusyShare, 0.41, 1e-4)

	ce := finding(r, "comm-exposed")
	if ce == nil || ce.WastedNS != 41*ms || ce.Severity.String() != "error" {
		t.Fatalf("comm-exposed %+v", ce)
	}
	if ce.Detail["collectives_per_step"] != 1 || ce.Detail["median_bytes"] != 64<<20 {
		t.Errorf("comm-exposed detail %v", ce.Detail)
	}
	// The wait dominates: the fix is on the slower rank.
	if !strings.Contains(ce.Fix, "waiting for other ranks") || !strings.Contains(ce.Evidence[0].What, "allreduce of 67.1 MB (Float, group 0 of 2 ranks) ran 50.0 ms") {
		t.Errorf("comm-exposed fix or evidence: %s / %+v", ce.Fix, ce.Evidence)
	}
	cw := finding(r, "comm-wait")
	// Beyond the fastest 64 MB all-reduce (5 ms): 45 ms in each of 4 steps.
	if cw == nil || cw.WastedNS != 4*45*ms/5 || cw.Severity.String() != "error" {
		t.Fatalf("comm-wait %+v", cw)
	}
	if !strings.Contains(cw.Evidence[0].What, "waited at least 45.0 ms for peers") || !strings.Contains(cw.Evidence[0].What, "took 5.00 ms") {
		t.Errorf("comm-wait evidence %+v", cw.Evidence[0])
	}
	if len(r.Collectives) != 5 || r.Collectives[1].Step != 1 || r.Collectives[1].Order != 0 || r.Collectives[1].Bytes != 64<<20 ||
		len(r.Collectives[1].Exposed) != 1 || r.Collectives[1].Exposed[0] != [2]int64{140*ms + 10*us, 190*ms + 10*us} {
		t.Errorf("collectives %+v", r.Collectives)
	}
	if r.Device == nil || *r.Device != 0 || r.PID == nil || *r.PID != 1 || r.Rank != nil {
		t.Errorf("identity %+v", r.Identity)
	}
	// Collectives never count as compute, nor as GPU idle time.
	if gi := finding(r, "gpu-idle"); gi != nil && gi.WastedNS > 20*ms {
		t.Errorf("gpu-idle counts communication as idle: %+v", gi)
	}
}

// An all-reduce that runs while compute kernels run is hidden: no comm
// bucket, no finding, and compute-bound.
func TestOverlappedCommunicationIsHidden(t *testing.T) {
	b := tt.New()
	h := b.Thread(1, 1, "python")
	s, nccl := b.Stream(0, 7), b.Stream(0, 20)
	for i := range 4 {
		t0 := int64(i) * 100 * ms
		b.Range(h, fmt.Sprintf("ProfilerStep#%d", i), t0, t0+100*ms)
		b.Launch(h, s, "gemm", t0, t0+5*us, t0+10*us, t0+99*ms)
		b.Collective(h, nccl, timeline.Collective{Op: "allreduce", Bytes: 1 << 20, Group: "0", GroupSize: 8, Seq: int64(i)},
			t0+10*ms, t0+10*ms+5*us, t0+20*ms, t0+60*ms)
	}
	r := run(t, b.Build(t))
	if r.Steps.BreakdownNS[index.Comm] != 0 || finding(r, "comm-exposed") != nil || finding(r, "comm-wait") != nil {
		t.Errorf("hidden communication reported: %+v %+v", r.Steps.BreakdownNS, r.Findings)
	}
	if !strings.HasPrefix(r.Verdict, "compute-bound") {
		t.Errorf("verdict %q", r.Verdict)
	}
	if c := r.Collectives[2]; c.Seq == nil || *c.Seq != 2 || len(c.Exposed) != 0 || c.GroupSize != 8 {
		t.Errorf("collective %+v", c)
	}
}

// Many small exposed collectives: the fix is fewer, larger ones.
func TestManySmallCollectives(t *testing.T) {
	b := tt.New()
	h := b.Thread(1, 1, "python")
	s, nccl := b.Stream(0, 7), b.Stream(0, 20)
	for i := range 4 {
		t0 := int64(i) * 100 * ms
		b.Range(h, fmt.Sprintf("ProfilerStep#%d", i), t0, t0+100*ms)
		b.Launch(h, s, "gemm", t0, t0+5*us, t0+10*us, t0+40*ms)
		for k := range 30 {
			ks := t0 + 40*ms + int64(k)*ms
			b.Collective(h, nccl, timeline.Collective{Op: "allreduce", Bytes: 64 << 10, Group: "0", GroupSize: 2, Seq: -1},
				ks, ks+5*us, ks+10*us, ks+900*us)
		}
	}
	r := run(t, b.Build(t))
	ce := finding(r, "comm-exposed")
	if ce == nil || ce.Detail["collectives_per_step"] != 30 || !strings.Contains(ce.Fix, "bucket_cap_mb") || !strings.Contains(ce.Code, "bucket_cap_mb=100") {
		t.Fatalf("comm-exposed %+v", ce)
	}
	if r.Collectives[29].Order != 29 || r.Collectives[30].Order != 0 || r.Collectives[30].Step != 1 {
		t.Errorf("order on the group within a step: %+v %+v", r.Collectives[29], r.Collectives[30])
	}
}

// Collectives known by kernel name only (nsys): comm-exposed still runs,
// comm-wait says why one trace cannot tell waiting from moving data.
func TestCollectivesWithoutSizes(t *testing.T) {
	b := tt.New()
	h := b.Thread(1, 1, "python")
	s, nccl := b.Stream(0, 7), b.Stream(0, 20)
	for i := range 4 {
		t0 := int64(i) * 100 * ms
		b.Range(h, fmt.Sprintf("ProfilerStep#%d", i), t0, t0+100*ms)
		b.Launch(h, s, "gemm", t0, t0+5*us, t0+10*us, t0+40*ms)
		b.Launch(h, nccl, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", t0+40*ms, t0+40*ms+5*us, t0+40*ms+10*us, t0+90*ms)
	}
	r := run(t, b.Build(t))
	if finding(r, "comm-exposed") == nil || finding(r, "comm-wait") != nil || notObservable(r, "comm-wait") != commwait.NoSizes {
		t.Errorf("findings %+v, not observable %+v", r.Findings, r.NotObservable)
	}
	if c := r.Collectives[0]; c.Name != "allreduce" || c.Bytes != 0 || c.Group != "" {
		t.Errorf("collective from the kernel name: %+v", c)
	}
}

// A single-GPU trace has no collectives, no comm figures and no identity.
func TestSingleGPUHasNoCommunication(t *testing.T) {
	r := run(t, inputBound(4).Build(t))
	if len(r.Collectives) != 0 || r.GPU.CommBusyShare != 0 || r.Steps.BreakdownNS[index.Comm] != 0 || r.Device != nil || r.PID != nil {
		t.Errorf("%+v %+v %+v", r.Collectives, r.GPU, r.Identity)
	}
	if notObservable(r, "comm-wait") != "" || notObservable(r, "comm-exposed") != "" {
		t.Errorf("communication analyzers listed as not observable on a single-GPU trace: %+v", r.NotObservable)
	}
}
