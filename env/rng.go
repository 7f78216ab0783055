package env

import "math/bits"

// RNG is a small xoshiro256** generator. It is a plain value, so a State that
// holds one is copied (Clone) or serialized with its exact future.
type RNG struct{ s [4]uint64 }

// NewRNG seeds a generator from a seed and a stream number: (seed, env index)
// gives every env of a batch its own independent sequence.
func NewRNG(seed, stream uint64) RNG {
	x := seed ^ (stream * 0x9e3779b97f4a7c15) ^ 0x6a09e667f3bcc909
	var r RNG
	for i := range r.s {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		r.s[i] = z ^ (z >> 31)
	}
	if r.s == [4]uint64{} {
		r.s[0] = 1
	}
	return r
}

// Uint64 returns the next 64 random bits.
func (r *RNG) Uint64() uint64 {
	s := &r.s
	out := bits.RotateLeft64(s[1]*5, 7) * 9
	t := s[1] << 17
	s[2] ^= s[0]
	s[3] ^= s[1]
	s[1] ^= s[2]
	s[0] ^= s[3]
	s[2] ^= t
	s[3] = bits.RotateLeft64(s[3], 45)
	return out
}

// IntN returns a uniform integer in [0, n), n > 0 (Lemire's method, unbiased).
func (r *RNG) IntN(n int) int {
	hi, lo := bits.Mul64(r.Uint64(), uint64(n))
	if lo < uint64(n) {
		thresh := -uint64(n) % uint64(n)
		for lo < thresh {
			hi, lo = bits.Mul64(r.Uint64(), uint64(n))
		}
	}
	return int(hi)
}

// Float64 returns a uniform float in [0, 1).
func (r *RNG) Float64() float64 { return float64(r.Uint64()>>11) / (1 << 53) }

// Words is the generator's whole state (for serializing a game).
func (r *RNG) Words() [4]uint64 { return r.s }

// SetWords restores a state Words returned.
func (r *RNG) SetWords(w [4]uint64) { r.s = w }

// Source is what a game's ResampleFromInfostate needs of a generator; *RNG and
// math/rand/v2's *rand.Rand both satisfy it.
type Source interface{ Uint64() uint64 }
