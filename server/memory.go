package server

import (
	"fmt"
	"math"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/spiel"
)

// sessionCost is what a session may come to hold at worst, worked out from
// its settings before it is built: the memory counted against
// limits.memory_budget, and the sizes of its answers.
type sessionCost struct {
	bytes   int64 // memory at worst: engine, records, buffers
	answer  int64 // bytes of a msgpack batch answer
	maxBlob int64 // the largest tensor of an answer, in bytes
}

// costOf works out the worst case of a session of n envs of game g with
// observations as obsDtype ("<u1"/"<f4") or bit-packed: env.CostOf, the
// estimate the in-process library checks too.
func costOf(n int, g spiel.Game, obsDtype string, packed bool) sessionCost {
	c := env.CostOf(n, g, obsDtype == dtypeF4, packed)
	return sessionCost{bytes: c.Bytes, answer: c.Answer, maxBlob: c.MaxBlob}
}

// mib formats bytes as MiB for messages.
func mib(b int64) string { return fmt.Sprintf("%.0f MiB", math.Ceil(float64(b)/(1<<20))) }
