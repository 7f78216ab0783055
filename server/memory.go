package server

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/obs"
)

// sessionCost is what a session may come to hold at worst, worked out from
// its settings before it is built: the memory counted against
// limits.memory_budget, and the sizes of its answers.
type sessionCost struct {
	bytes   int64 // memory at worst: engine, records, buffers
	answer  int64 // bytes of a msgpack batch answer
	maxBlob int64 // the largest tensor of an answer, in bytes
}

// heapMargin is added to the engine's memory (in eighths): the allocator's
// size classes, page rounding and the garbage collector's slack. With a
// quarter, every measured peak RSS (the whole process's) stays under the
// estimate (docs/benchmarks.md).
const heapMargin = 2

// sessionOverhead is the fixed memory of a session whatever its size
// (worker goroutines' stacks, the spec, the encoder's prefixes), rounded up.
const sessionOverhead = 256 << 10

// costOf works out the worst case of a session of n envs of game p with
// observations as obsDtype ("<u1"/"<f4") or bit-packed.
//
// Each env holds its State and bot RNG, and two game records (the last
// finished game and the one in progress) whose deals are allocated up front
// and filled as deals are played: at worst every deal of both. The output
// buffers are the engine's (obs or its packed form, mask, player, rewards,
// done, scores, episode); the server adds the action buffers, the request
// body and float32 observations for "<f4" sessions, with a margin for the
// heap's rounding. Answers, msgpack or JSON, are written straight from
// those buffers (JSON's base64 is encoded as it is written), so they add
// nothing that grows with the session.
func costOf(n int, p env.Params, obsDtype string, packed bool) sessionCost {
	l := obs.NewLayout(p.Players)
	d, players := int64(l.Size), int64(p.Players)
	perEnv := int64(unsafe.Sizeof(env.State{})) + int64(unsafe.Sizeof(env.RNG{})) + 1 +
		2*(int64(unsafe.Sizeof(env.Record{}))+int64(p.Deals)*int64(unsafe.Sizeof(env.DealRecord{})))
	var obsBlob, obsEngine int64
	switch {
	case packed:
		pk := l.Packing()
		obsBlob = int64(pk.Bytes + pk.ExtraBytes + env.MaskBytes)
		obsEngine = obsBlob + env.NumActions // the byte mask is kept too
	case obsDtype == dtypeF4:
		obsBlob = 4*d + env.NumActions
		obsEngine = d + env.NumActions + 4*d // the engine's bytes and the float copy
	default:
		obsBlob = d + env.NumActions
		obsEngine = obsBlob
	}
	rest := 1 + 4*players + 1 + 4*players + 8 // player, rewards, done, scores, episode
	perEnv += obsEngine + rest
	perEnv += 4 + 4 + 8 + 4 + 24 // actions: engine, decoded, tensor scratch, last step; the step body's cap
	nn := int64(n)
	c := sessionCost{answer: nn*(obsBlob+rest) + 512}
	c.maxBlob = nn * max(obsBlob-env.NumActions, env.NumActions, 8, 4*players)
	if packed {
		c.maxBlob = nn * int64(max(l.Packing().Bytes, env.MaskBytes))
	}
	c.bytes = sessionOverhead + nn*perEnv*(8+heapMargin)/8
	return c
}

// mib formats bytes as MiB for messages.
func mib(b int64) string { return fmt.Sprintf("%.0f MiB", math.Ceil(float64(b)/(1<<20))) }
