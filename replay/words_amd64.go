package replay

import "golang.org/x/sys/cpu"

// vecWords says whether the word loops use 32-byte vector stores (AVX2),
// as PyTorch's vectorised CPU kernels do on such a machine.
var vecWords = cpu.X86.HasAVX2

//go:noescape
func fillVec(p *uint64, n int, v uint64)

//go:noescape
func addVec(p *uint64, n int, d uint64)
