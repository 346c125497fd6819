#include "textflag.h"

// func fillVec(p *uint64, n int, v uint64)
// Stores v into n words from p, 16 words (128 bytes) a loop with 32-byte
// AVX2 stores; n is a multiple of 16.
TEXT ·fillVec(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), DI
	MOVQ n+8(FP), CX
	MOVQ v+16(FP), X0
	VPBROADCASTQ X0, Y0
	SHRQ $4, CX
	JZ   filldone
fillloop:
	VMOVDQU Y0, 0(DI)
	VMOVDQU Y0, 32(DI)
	VMOVDQU Y0, 64(DI)
	VMOVDQU Y0, 96(DI)
	ADDQ $128, DI
	DECQ CX
	JNZ  fillloop
filldone:
	VZEROUPPER
	RET

// func addVec(p *uint64, n int, d uint64)
// Adds d to n words from p, 16 words a loop with 32-byte AVX2 loads, adds
// and stores; n is a multiple of 16.
TEXT ·addVec(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), DI
	MOVQ n+8(FP), CX
	MOVQ d+16(FP), X0
	VPBROADCASTQ X0, Y0
	SHRQ $4, CX
	JZ   adddone
addloop:
	VPADDQ 0(DI), Y0, Y1
	VPADDQ 32(DI), Y0, Y2
	VPADDQ 64(DI), Y0, Y3
	VPADDQ 96(DI), Y0, Y4
	VMOVDQU Y1, 0(DI)
	VMOVDQU Y2, 32(DI)
	VMOVDQU Y3, 64(DI)
	VMOVDQU Y4, 96(DI)
	ADDQ $128, DI
	DECQ CX
	JNZ  addloop
adddone:
	VZEROUPPER
	RET
