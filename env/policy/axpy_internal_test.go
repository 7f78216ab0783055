package policy

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// axpyRef is the plain loop the forward pass used before axpy: one rounded
// product and one rounded sum a column.
func axpyRef(a float32, x, y []float32) {
	for j, v := range x {
		y[j] += float32(a * v)
	}
}

// axpy (the AVX2 kernel where the machine has it) gives the plain loop's
// result to the bit, at every length (the 32-, 8- and 1-column steps and
// their tails), with y longer than x left alone past len(x), and on
// values whose products round (random mantissas, subnormals, signed
// zeros, large exponents).
func TestAxpyBitForBit(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	val := func() float32 {
		switch rng.IntN(10) {
		case 0:
			return 0
		case 1:
			return float32(math.Copysign(0, -1))
		case 2:
			return math.Float32frombits(rng.Uint32() & 0x807fffff) // subnormal
		case 3:
			return float32(rng.NormFloat64() * 1e30)
		}
		return float32(rng.NormFloat64())
	}
	for n := range 300 {
		for range 3 {
			a := val()
			x := make([]float32, n)
			y := make([]float32, n+5)
			for i := range x {
				x[i] = val()
			}
			for i := range y {
				y[i] = val()
			}
			want := append([]float32(nil), y...)
			axpyRef(a, x, want)
			got := append([]float32(nil), y...)
			axpy(a, x, got)
			for i := range y {
				require.Equalf(t, math.Float32bits(want[i]), math.Float32bits(got[i]),
					"n=%d a=%v column %d: %v, the plain loop %v (useAVX2=%v)", n, a, i, got[i], want[i], useAVX2)
			}
			gen := append([]float32(nil), y...)
			axpyGeneric(a, x, gen)
			require.Equal(t, want, gen, "axpyGeneric, n=%d", n)
		}
	}
}

// A y shorter than x is a programming error, caught before the kernel
// could write past it.
func TestAxpyShortY(t *testing.T) {
	require.Panics(t, func() { axpy(1, make([]float32, 16), make([]float32, 15)) })
}

func BenchmarkAxpy512(b *testing.B) {
	x, y := make([]float32, 512), make([]float32, 512)
	for i := range x {
		x[i] = float32(i)
	}
	for b.Loop() {
		axpy(0.5, x, y)
	}
}
