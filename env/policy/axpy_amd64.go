package policy

import "golang.org/x/sys/cpu"

// useAVX2 selects axpyAVX2 (the OS saves the YMM registers when HasAVX2
// is set).
var useAVX2 = cpu.X86.HasAVX2

// axpyAVX2 is axpy for len(y) == len(x), eight columns an instruction.
//
//go:noescape
func axpyAVX2(a float32, x, y []float32)
