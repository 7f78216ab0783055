package env

// The optional interfaces a game or its states implement for the batch
// engine's speed or exactness. The engine checks them once, when it is
// built (on the first env's state), and calls them per env: each env
// writes its own slot of the output buffers (EnvPool style). A game that
// implements none is stepped through State alone.

// StepRewarder is implemented by states that give a step's rewards
// themselves, in their own arithmetic, instead of the engine's change of
// WriteReturns around the action in float64. The card game implements it:
// a deal's points (and their zero-sum form) are float32 sums of int32
// points, which its seeded batch outputs have always been, and it spares
// two WriteReturns per action.
type StepRewarder interface {
	// ApplyRewarded plays the legal action a (as ApplyUnchecked), adds
	// each seat's reward for it under mode to rew[:NumPlayers], and
	// reports whether the game is over (IsTerminal).
	ApplyRewarded(a int, mode RewardMode, rew []float32) (terminal bool)
}

// BitsWriter is implemented by states that write their observation
// straight in its packed transport form (Game().Observation().Packing()),
// used by a packed engine instead of WriteObservation followed by
// obs.PackBits and Packing.PackExtra. The card game implements it with its
// encoder from bit sets (Layout.EncodeBits).
type BitsWriter interface {
	// WriteObservationBits writes seat player's observation as bits
	// (dst[:Bytes]) and the bytes of its sections above 1 (extra[:ExtraBytes]).
	WriteObservationBits(bits, extra []uint8, player int)
}

// RowWriter is implemented by states that write their env's row in one
// call: the seat to act, its legal-action mask and its observation, used
// instead of CurrentPlayer, WriteMask and WriteObservation (three calls
// through the interface per env-step). The card game implements it: its
// step is a few hundred nanoseconds, and the calls were measurable.
type RowWriter interface {
	// WriteRow writes the mask of the seat to act into mask[:NumDistinctActions]
	// and, unless obs is nil, that seat's observation into obs[:Size], and
	// returns the seat.
	WriteRow(mask, obs []uint8) (player int)
}

// StreamGame is implemented by games whose batch envs each draw all their
// games from one random stream of their own (a Reset with seed derives the
// env's streams from (seed, env index), and each next game continues
// them), instead of the engine seeding env i's k-th game with gameSeed
// (seed, i, k). The card game implements it: tests pin its seeded batch
// outputs, and its states keep their own records. NewStreamStates is
// called once, when the engine is built.
type StreamGame interface {
	// NewStreamStates returns the states of a batch of n envs (the card
	// game allocates them in one block): each a StreamState of this game,
	// to be started by StartStream.
	NewStreamStates(n int) []StreamState
}

// StreamState is a state of a StreamGame: it lives in its env for every
// game of it, and keeps the records the engine's Record returns (the card
// game: a ring of two records, the last finished game and the one in
// progress), so the engine keeps no second state per env.
type StreamState interface {
	State
	// StartStream makes the state env i of a batch reset with seed: its
	// stream is derived from (seed, i) and its records are dropped. It
	// returns the RNG the env's bots draw from. NextGame(true) follows.
	StartStream(seed uint64, i int) RNG
	// NextGame starts the next game in place from the state's stream.
	// restart: the batch is being reset (the game in progress, if any, is
	// abandoned and no finished game is kept); otherwise the game just
	// ended and is kept as the finished one.
	NextGame(restart bool)
	// Records returns copies of the last finished game (nil if none) and
	// of the game in progress.
	Records() (finished, current *Record)
}
