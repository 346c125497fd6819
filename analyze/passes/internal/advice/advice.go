// Package advice tells analyzers which kind of program a trace comes from,
// so that each fix is written in its terms: PyTorch training (DataLoader
// workers, pin_memory, torch.compile), PyTorch inference (no DataLoader
// training advice: requests, preprocessing, CUDA graphs for decoding), or
// a program that is not PyTorch (MPI, C++, Julia: CUDA runtime calls).
package advice

import "github.com/traceaudit/traceaudit/analyze/index"

// Program is the kind of program a trace comes from.
type Program int

// Programs.
const (
	// Training is PyTorch with a backward pass or an optimizer step.
	Training Program = iota
	// Inference is PyTorch without them.
	Inference
	// CUDA is any other program: advice uses CUDA runtime calls.
	CUDA
)

// Of says which kind of program the indexed trace comes from.
func Of(ix *index.Index) Program {
	switch {
	case !ix.PyTorch:
		return CUDA
	case ix.Training:
		return Training
	}
	return Inference
}

// Pick returns the text for program p.
func (p Program) Pick(training, inference, cuda string) string {
	switch p {
	case Training:
		return training
	case Inference:
		return inference
	}
	return cuda
}

// ReadBackWork is the fix, and its code, for host work on values just read
// back from the GPU (sync-api's cost beyond its wait, gpu-idle's cause of
// that name): the work moves to the GPU and the read becomes rare.
func (p Program) ReadBackWork() (fix, code string) {
	return p.Pick("Compute the metric on the GPU, accumulate it there and read it every N steps: the host work goes with the read.",
			"Keep the post-processing on the GPU and read back the final result once per input or batch.",
			"Compute on the device and copy back only what the host needs, once per iteration; or launch the next iteration's work before the host processes this one's results."),
		p.Pick(`metric_sum += metric_on_gpu(logits, y).detach()   # no read-back
if step % 50 == 0:
    print(metric_sum.item() / 50)                   # one read every 50 steps`,
			`# post-process on the GPU; out.cpu() once per input, after the last operation`,
			`/* enqueue iteration i+1 before processing iteration i's results on the host */`)
}
