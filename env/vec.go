package env

import (
	"errors"
	"fmt"
	"runtime/debug"
	"slices"

	"github.com/davidgoliath/dgenv/obs"
)

// RewardMode says how returns become rewards.
type RewardMode int

const (
	// RewardPoints gives each seat the change of its return.
	RewardPoints RewardMode = iota
	// RewardZeroSum gives each seat its change minus the mean of the others'.
	RewardZeroSum
)

func (m RewardMode) String() string {
	if m == RewardZeroSum {
		return "zero_sum"
	}
	return "points"
}

// ParseRewardMode reads "points" (or "") or "zero_sum".
func ParseRewardMode(s string) (RewardMode, error) {
	switch s {
	case "points", "":
		return RewardPoints, nil
	case "zero_sum":
		return RewardZeroSum, nil
	}
	return 0, &ConfigError{"reward", s, `want "points" or "zero_sum"`}
}

// ZeroSum returns own minus the mean of the others' (n > 1 values): the one
// definition of "own points minus the mean of the others".
func ZeroSum[T float32 | float64](own, sum T, n int) T {
	return own - (sum-own)/T(n-1)
}

// ZeroSumReward is the "zero_sum" reward of a seat whose points changed by
// own, when the n seats' changes sum to sum, in a game of type t: own minus
// the mean of the others' (ZeroSum), except in a game whose returns already
// sum to zero (t.ZeroSum: the duel's +1/-1), which keeps own. Subtracting
// the other seat's -1 there would double every result. The one definition
// of the zero-sum reward, for every game and front end.
func ZeroSumReward[T float32 | float64](t *Type, own, sum T, n int) T {
	if t.ZeroSum {
		return own
	}
	return ZeroSum(own, sum, n)
}

// ConfigError names the VecConfig field that is wrong (as the wire names it).
type ConfigError struct {
	Field  string
	Value  any
	Reason string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("%s = %v: %s", e.Field, e.Value, e.Reason) }

// MaxNumEnvs bounds a Vec's size.
const MaxNumEnvs = 1 << 20

// Skip, as env i's action in Step, leaves env i as it is for that step.
const Skip = -1

// VecConfig configures a Vec of any game.
type VecConfig struct {
	NumEnvs int
	Seed    uint64
	// LearnerSeats are the seats the caller plays; empty means all.
	LearnerSeats []int
	// Opponent plays the other seats (its name, for the spec); Bot is the
	// bot itself, made by the registry.
	Opponent string
	Bot      Bot
	// Opponents, instead of Opponent, names a bot per seat: "" on learner
	// seats (a table of different bots). Bots are those bots, nil on
	// learner seats (Registry.SeatBots makes them). With no LearnerSeats,
	// the seats whose entry is "" are the learner seats.
	Opponents []string
	Bots      []Bot
	Reward    RewardMode
	// Workers is the number of goroutines stepping the batch, each a
	// contiguous chunk of envs (0: GOMAXPROCS; at most one per 64 envs).
	// Results never depend on it. The bots are shared by the workers.
	Workers int
	Packed  bool
}

// Check validates the parts of cfg every Vec shares, for a game of p
// seats, and returns the learner seats sorted (nil for all).
func (cfg *VecConfig) Check(p int) ([]int, error) {
	if cfg.NumEnvs < 1 || cfg.NumEnvs > MaxNumEnvs {
		return nil, &ConfigError{"num_envs", cfg.NumEnvs, fmt.Sprintf("must be 1..%d", MaxNumEnvs)}
	}
	var seen [64]bool
	for _, s := range cfg.LearnerSeats {
		if s < 0 || s >= p {
			return nil, &ConfigError{"learner_seats", s, fmt.Sprintf("learner seat must be 0..%d", p-1)}
		}
		if seen[s] {
			return nil, &ConfigError{"learner_seats", s, "learner seat given twice"}
		}
		seen[s] = true
	}
	seats := slices.Sorted(slices.Values(cfg.LearnerSeats))
	if cfg.Opponents != nil || cfg.Bots != nil {
		if cfg.Opponent != "" || cfg.Bot != nil {
			return nil, &ConfigError{"opponents", fmt.Sprintf("%q", cfg.Opponents), OneOpponentForm}
		}
		var err error
		if seats, err = CheckOpponents(p, seats, cfg.Opponents); err != nil {
			return nil, err
		}
		if len(cfg.Bots) != p {
			return nil, &ConfigError{"opponents", len(cfg.Bots), fmt.Sprintf("%d bots made for %d seats", len(cfg.Bots), p)}
		}
		for s, b := range cfg.Bots {
			if (b == nil) != (cfg.Opponents[s] == "") {
				return nil, &ConfigError{"opponents", cfg.Opponents[s], fmt.Sprintf("seat %d: the bot made does not match its name", s)}
			}
		}
		return seats, cfg.checkReward()
	}
	if len(seats) == p {
		seats = nil
	}
	if len(seats) > 0 && cfg.Bot == nil {
		return nil, &ConfigError{"opponent", cfg.Opponent, "required when learner_seats leaves seats to play"}
	}
	return seats, cfg.checkReward()
}

func (cfg *VecConfig) checkReward() error {
	if cfg.Reward != RewardPoints && cfg.Reward != RewardZeroSum {
		return &ConfigError{"reward", int(cfg.Reward), "unknown reward mode"}
	}
	return nil
}

// CheckOpponents checks a per-seat list of bot names (opponents: "" on
// learner seats) for a game of p seats against the learner seats given
// (ascending, each 0..p-1 once; empty: the seats whose entry is ""), and
// returns the learner seats (nil for all). The one rule for every Vec.
func CheckOpponents(p int, seats []int, opponents []string) ([]int, error) {
	if len(opponents) != p {
		return nil, &ConfigError{"opponents", len(opponents), fmt.Sprintf("want a list of %d entries, one per seat (null or \"\" for learner seats)", p)}
	}
	if len(seats) == 0 {
		for s, name := range opponents {
			if name == "" {
				seats = append(seats, s)
			}
		}
		if len(seats) == 0 {
			return nil, &ConfigError{"opponents", fmt.Sprintf("%q", opponents), "every seat has a bot: leave at least one entry null for the caller to play"}
		}
	}
	var learner [64]bool
	for _, s := range seats {
		learner[s] = true
	}
	for s, name := range opponents {
		switch {
		case learner[s] && name != "":
			return nil, &ConfigError{"opponents", fmt.Sprintf("%q", name), fmt.Sprintf("seat %d is a learner seat: its entry must be null", s)}
		case !learner[s] && name == "":
			return nil, &ConfigError{"opponents", "null", fmt.Sprintf("seat %d is not a learner seat: name the bot that plays it", s)}
		}
	}
	if len(seats) == p {
		seats = nil
	}
	return seats, nil
}

// SeatBots returns the bot of each seat (nil for learner seats) of a Vec
// of p seats built with cfg, after Check: Bots, or Bot on every seat
// that is not a learner seat.
func (cfg *VecConfig) SeatBots(p int, learner []bool) []Bot {
	bots := make([]Bot, p)
	for s := range p {
		switch {
		case learner[s]:
		case cfg.Bots != nil:
			bots[s] = cfg.Bots[s]
		default:
			bots[s] = cfg.Bot
		}
	}
	return bots
}

// Vec steps N games at once into preallocated structure-of-arrays buffers
// (EnvPool-style). Seat-indexed rows are in absolute seat order. Buffers
// are valid until the next Reset or Step. Not safe for concurrent use.
type Vec interface {
	Game() Game
	NumEnvs() int
	LearnerSeats() []int // ascending, every seat for self-play
	Obs() []uint8        // [N, D] observation of the seat to act (nil if packed)
	Mask() []uint8       // [N, A] 1 = legal
	Player() []int8      // [N] seat to act
	Rewards() []float32  // [N, P] reward of this step
	Done() []uint8       // [N] 1 where this step ended a game
	Scores() []int32     // [N, P] returns of the game that just ended
	Episode() []int64    // [N] games finished since the last reset
	ObsBits() []uint8    // packed only: [N, Packing().Bytes]
	ObsExtra() []uint8   // packed only: [N, Packing().ExtraBytes]
	MaskBits() []uint8   // packed only: [N, ceil(A/8)]
	Packing() obs.Packing
	// Reset starts a new game in every env from (seed, env index).
	Reset(seed uint64)
	// ResetContinue starts new games continuing each env's streams.
	ResetContinue()
	// Step plays actions[i] in env i (Skip leaves it), then the opponents
	// until a learner seat is to act; an ended game is reset in the same
	// step (done = 1, scores set). An illegal action is an error naming the
	// env and nothing changes.
	Step(actions []int32) error
	// SetObsTarget makes the following Resets and Steps write every env's
	// observation row (a skipped env's too) into dst ([N, D]) instead of
	// the Vec's own buffer, until SetObsTarget(nil); Obs() returns dst
	// meanwhile, and the own buffer is stale after it until the next Reset
	// or Step. For a caller that owns the memory answers go to (libdgenv:
	// numpy's): one copy less per step. A packed Vec refuses.
	SetObsTarget(dst []uint8) error
	// Err is the panic that broke the Vec, or nil.
	Err() error
	Close()
	// Record returns env k's last finished game (nil before one ends) and
	// the game in progress.
	Record(k int) (finished, current *Record, err error)
	// State is env k's game in progress, for reading (a caller must not
	// change it); valid until the next Reset or Step.
	State(k int) State
}

// NewVec builds the batch engine of g (the one engine of every game): the
// engine checks once here which optional interfaces g and its states
// implement (vec_optional.go) and uses them per env.
func NewVec(g Game, cfg VecConfig) (Vec, error) { return newEngine(g, cfg) }

// ErrIllegalAction is wrapped by every *IllegalActionError.
var ErrIllegalAction = errors.New("illegal action")

// IllegalActionError says which action was refused and what was legal.
type IllegalActionError struct {
	Env    int // index in a batch; -1 for a single State
	Player int
	Action int
	Legal  []int
}

func (e *IllegalActionError) Error() string {
	where := ""
	if e.Env >= 0 {
		where = fmt.Sprintf("env %d: ", e.Env)
	}
	return fmt.Sprintf("%sillegal action %d for seat %d (legal: %v)", where, e.Action, e.Player, e.Legal)
}

func (e *IllegalActionError) Unwrap() error { return ErrIllegalAction }

// PanicError is a panic caught while stepping: the Vec is broken after it.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic while stepping: %v", e.Value) }

// Recovered turns a value from recover() into a *PanicError, keeping the
// stack of a panic already caught and passed on. Call it in the deferred
// function that recovered, so the stack is the panicking one.
func Recovered(p any) *PanicError {
	if e, ok := p.(*PanicError); ok {
		return e
	}
	return &PanicError{Value: p, Stack: debug.Stack()}
}

// Resetter is implemented by states that can start a new game in place
// (no allocation per game).
type Resetter interface {
	Reset(seed uint64)
}
