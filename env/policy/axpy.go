package policy

// axpy adds a times x to y: y[j] += a * x[j] for j < len(x), len(y) >=
// len(x). It is the inner loop of every MatMul/Gemm step, most of a
// decision's time. On amd64 with AVX2 it runs eight columns an instruction
// (axpy_amd64.s); everywhere it computes each y[j] exactly as
// axpyGeneric does, one rounded product and one rounded sum (no fused
// multiply-add), so the logits are the same to the bit on every machine.
func axpy(a float32, x, y []float32) {
	y = y[:len(x)]
	if useAVX2 && len(x) >= 8 {
		axpyAVX2(a, x, y)
		return
	}
	axpyGeneric(a, x, y)
}

// axpyGeneric is axpy in Go, four columns a step (one bounds check per
// four). The float32 conversions round each product on its own: without
// them the compiler may fuse the multiply and the add (the spec allows it,
// and GOAMD64=v3 does it), which rounds once and gives other logits.
func axpyGeneric(a float32, x, y []float32) {
	y = y[:len(x)]
	j := 0
	for ; j+4 <= len(x); j += 4 {
		x4, y4 := x[j:j+4:j+4], y[j:j+4:j+4]
		y4[0] += float32(a * x4[0])
		y4[1] += float32(a * x4[1])
		y4[2] += float32(a * x4[2])
		y4[3] += float32(a * x4[3])
	}
	for ; j < len(x); j++ {
		y[j] += float32(a * x[j])
	}
}
