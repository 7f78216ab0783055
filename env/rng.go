package env

import (
	"math/bits"

	"github.com/davidgoliath/dgenv/env/spiel"
)

// RNG is a small xoshiro256** generator (spiel.RNG: bots of every game
// draw from it). It is a plain value, so a State that holds one is copied
// (Clone) or serialized with its exact future.
type RNG = spiel.RNG

// NewRNG seeds a generator from a seed and a stream number: (seed, env index)
// gives every env of a batch its own independent sequence.
func NewRNG(seed, stream uint64) RNG { return spiel.NewRNG(seed, stream) }

// Source is what ResampleFromInfostate needs of a generator; *RNG and
// math/rand/v2's *rand.Rand both satisfy it.
type Source interface{ Uint64() uint64 }

func intN(src Source, n int) int {
	hi, lo := bits.Mul64(src.Uint64(), uint64(n))
	if lo < uint64(n) {
		thresh := -uint64(n) % uint64(n)
		for lo < thresh {
			hi, lo = bits.Mul64(src.Uint64(), uint64(n))
		}
	}
	return int(hi)
}

func popcount(m uint32) int      { return bits.OnesCount32(m) }
func trailingZeros(m uint32) int { return bits.TrailingZeros32(m) }
