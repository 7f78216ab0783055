package card

import (
	"math/bits"

	"github.com/davidgoliath/dgenv/env"
)

// RNG is a small xoshiro256** generator (env.RNG: bots of every game
// draw from it). It is a plain value, so a State that holds one is copied
// (Clone) or serialized with its exact future.
type RNG = env.RNG

// NewRNG seeds a generator from a seed and a stream number: (seed, env index)
// gives every env of a batch its own independent sequence.
func NewRNG(seed, stream uint64) RNG { return env.NewRNG(seed, stream) }

func intN(src env.Source, n int) int {
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
