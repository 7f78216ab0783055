//go:build !amd64

package policy

const useAVX2 = false

func axpyAVX2(a float32, x, y []float32) { axpyGeneric(a, x, y) }
