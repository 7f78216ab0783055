package env

import (
	"unsafe"

	"github.com/davidgoliath/dgenv/obs"
)

// SessionCost is what a batch of envs may come to hold at worst, worked out
// from its settings before it is built: the memory a front end counts
// against its memory budget (the server's limits.memory_budget, the
// in-process library's memory_budget), and the sizes of its answers.
type SessionCost struct {
	Bytes   int64 // memory at worst: engine, records, buffers
	Answer  int64 // bytes of a msgpack batch answer
	MaxBlob int64 // the largest tensor of an answer, in bytes
}

// heapMargin is added to the engine's memory (in eighths): the allocator's
// size classes, page rounding and the garbage collector's slack. With a
// quarter, every measured peak RSS (the whole process's) stays under the
// estimate (docs/benchmarks.md).
const heapMargin = 2

// sessionOverhead is the fixed memory of a session whatever its size
// (worker goroutines' stacks, the spec, the encoder's prefixes), rounded up.
const sessionOverhead = 256 << 10

// genericStateBytes is what is counted for one State of a game that says
// nothing of its size (no StateSizer), besides its history.
const genericStateBytes = 2048

// EnvSizer is implemented by a game with a batch kernel of its own (the
// card game's): EnvBytes is what one env of it holds at worst besides the
// engine's output buffers (its State, bot RNG and game records).
type EnvSizer interface{ EnvBytes() int64 }

// StateSizer is implemented by a game that knows what one of its States
// holds at worst, its history included (the duel, the test game): the
// engine's two States per env are counted with it. A game without it is
// counted genericStateBytes plus 8 bytes per action of its longest game
// a State.
type StateSizer interface{ StateBytes() int64 }

// CostOf works out the worst case of a batch of n envs of game g with
// observations as bytes, as float32 (obsF32) or bit-packed. It is the one
// estimate of a session's memory: the server and the in-process library
// both check it against their budgets.
//
// Each env holds its State and bot RNG, and two game records (the last
// finished game and the one in progress) whose deals are allocated up front
// and filled as deals are played: at worst every deal of both. The output
// buffers are the engine's (obs or its packed form, mask, player, rewards,
// done, scores, episode); a front end adds the action buffers, the request
// body and float32 observations for obsF32 batches, with a margin for the
// heap's rounding. Answers, msgpack or JSON, are written straight from
// those buffers (JSON's base64 is encoded as it is written), so they add
// nothing that grows with the session.
//
// A game with a kernel of its own says what one env holds (EnvSizer).
// A game with no kernel of its own (the generic Vec) holds two States per
// env: each counted as the game says (StateSizer), or else as
// genericStateBytes plus 8 bytes per action of its longest game (a history).
func CostOf(n int, g Game, obsF32, packed bool) SessionCost {
	l := g.Observation()
	na := int64(g.NumDistinctActions())
	maskBytes := int64(obs.PackedLen(int(na)))
	d, players := int64(l.Size), int64(g.NumPlayers())
	var perEnv int64
	switch sz := g.(type) {
	case EnvSizer:
		perEnv = sz.EnvBytes()
	case StateSizer:
		perEnv = 2*sz.StateBytes() + int64(unsafe.Sizeof(RNG{})) + 8 + 1
	default:
		perEnv = 2*(genericStateBytes+8*int64(g.MaxGameLength())) + int64(unsafe.Sizeof(RNG{})) + 8 + 1
	}
	var obsBlob, obsEngine int64
	switch {
	case packed:
		pk := l.Packing()
		obsBlob = int64(pk.Bytes+pk.ExtraBytes) + maskBytes
		obsEngine = obsBlob + na + d // the byte mask is kept too, and (generic) one observation
	case obsF32:
		obsBlob = 4*d + na
		obsEngine = d + na + 4*d // the engine's bytes and the float copy
	default:
		obsBlob = d + na
		obsEngine = obsBlob
	}
	rest := 1 + 4*players + 1 + 4*players + 8 // player, rewards, done, scores, episode
	perEnv += obsEngine + rest
	perEnv += 4 + 4 + 8 + 4 + 24 // actions: engine, decoded, tensor scratch, last step; the step body's cap
	nn := int64(n)
	c := SessionCost{Answer: nn*(obsBlob+rest) + 512}
	c.MaxBlob = nn * max(obsBlob-na, na, 8, 4*players)
	if packed {
		c.MaxBlob = nn * max(int64(l.Packing().Bytes), maskBytes)
	}
	c.Bytes = sessionOverhead + nn*perEnv*(8+heapMargin)/8
	return c
}

// HeapBytes is what an allocation of n bytes may take on the heap, for a
// StateSizer to add up: Go's size classes waste at most an eighth, with a
// word of rounding.
func HeapBytes(n int64) int64 { return n + n/8 + 16 }

// SizeOf is the size of a T (unsafe.Sizeof), for a StateSizer whose
// package keeps off unsafe.
func SizeOf[T any]() int64 {
	var t T
	return int64(unsafe.Sizeof(t))
}
