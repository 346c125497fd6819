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
