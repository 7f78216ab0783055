package env

import (
	"errors"
	"fmt"
	"math"
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
	Workers   int // 0: GOMAXPROCS (a game's own kernel may use them)
	Packed    bool
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
}

// Vectorizer is implemented by games that bring their own batch kernel.
type Vectorizer interface {
	NewVec(cfg VecConfig) (Vec, error)
}

// NewVec builds a Vec of g: the game's own kernel if it has one, else the
// generic one.
func NewVec(g Game, cfg VecConfig) (Vec, error) {
	if v, ok := g.(Vectorizer); ok {
		return v.NewVec(cfg)
	}
	return newGenericVec(g, cfg)
}

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

// Resetter is implemented by states that can start a new game in place
// (no allocation per game).
type Resetter interface {
	Reset(seed uint64)
}

// genericVec is the Vec of a game with no kernel of its own: one goroutine,
// the State interface, two states per env (the game in progress and the
// last finished one, kept for Record).
type genericVec struct {
	g                     Game
	n, p, a, d            int
	learner               []bool
	bots                  []Bot // per seat, nil for learner seats
	seats                 []int
	cfg                   VecConfig
	cur, prev             []State
	ended                 []bool // prev holds a finished game
	rng                   []RNG
	seed                  uint64
	games                 []uint64 // games started in env i since the reset
	ret                   []float64
	obsB, mask            []uint8
	obsOwn                []uint8 // the own observation buffer (obsB without a target)
	target                bool    // obsB is a caller's (SetObsTarget)
	rewrite               bool    // write every env's row at the next Step (obsOwn missed steps of a target)
	bits, extra, maskBits []uint8
	packing               obs.Packing
	player                []int8
	rewards               []float32
	done                  []uint8
	scores                []int32
	episode               []int64
	scratch               []uint8 // one observation, for packing
	failed                *PanicError
	closed                bool
}

func newGenericVec(g Game, cfg VecConfig) (Vec, error) {
	p := g.NumPlayers()
	seats, err := cfg.Check(p)
	if err != nil {
		return nil, err
	}
	cfg.LearnerSeats = seats
	n, a, d := cfg.NumEnvs, g.NumDistinctActions(), g.Observation().Size
	v := &genericVec{g: g, n: n, p: p, a: a, d: d, cfg: cfg, learner: make([]bool, p),
		cur: make([]State, n), prev: make([]State, n), ended: make([]bool, n), rng: make([]RNG, n),
		games: make([]uint64, n), ret: make([]float64, 2*p), mask: make([]uint8, n*a),
		player: make([]int8, n), rewards: make([]float32, n*p), done: make([]uint8, n),
		scores: make([]int32, n*p), episode: make([]int64, n)}
	for s := range p {
		v.learner[s] = len(seats) == 0 || slices.Contains(seats, s)
		if v.learner[s] {
			v.seats = append(v.seats, s)
		}
	}
	v.bots = cfg.SeatBots(p, v.learner)
	if cfg.Packed {
		v.packing = g.Observation().Packing()
		v.bits = make([]uint8, n*v.packing.Bytes)
		v.extra = make([]uint8, n*v.packing.ExtraBytes)
		v.maskBits = make([]uint8, n*obs.PackedLen(a))
		v.scratch = make([]uint8, d)
	} else {
		v.obsOwn = make([]uint8, n*d)
		v.obsB = v.obsOwn
	}
	v.Reset(cfg.Seed)
	if err := v.Err(); err != nil {
		return nil, err
	}
	return v, nil
}

func (v *genericVec) Game() Game           { return v.g }
func (v *genericVec) NumEnvs() int         { return v.n }
func (v *genericVec) LearnerSeats() []int  { return slices.Clone(v.seats) }
func (v *genericVec) Obs() []uint8         { return v.obsB }
func (v *genericVec) Mask() []uint8        { return v.mask }
func (v *genericVec) Player() []int8       { return v.player }
func (v *genericVec) Rewards() []float32   { return v.rewards }
func (v *genericVec) Done() []uint8        { return v.done }
func (v *genericVec) Scores() []int32      { return v.scores }
func (v *genericVec) Episode() []int64     { return v.episode }
func (v *genericVec) ObsBits() []uint8     { return v.bits }
func (v *genericVec) ObsExtra() []uint8    { return v.extra }
func (v *genericVec) MaskBits() []uint8    { return v.maskBits }
func (v *genericVec) Packing() obs.Packing { return v.packing }
func (v *genericVec) Close()               { v.closed = true }

func (v *genericVec) Err() error {
	if v.failed != nil {
		return v.failed
	}
	return nil
}

// gameSeed is the seed of env i's k-th game: splitmix64 of (seed, i, k).
func gameSeed(seed uint64, i int, k uint64) uint64 {
	z := seed ^ (uint64(i)+1)*0x9E3779B97F4A7C15 ^ (k+1)*0xBF58476D1CE4E5B9
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

func (v *genericVec) guard(f func()) {
	if v.failed != nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			if e, ok := p.(*PanicError); ok {
				v.failed = e
			} else {
				v.failed = &PanicError{Value: p, Stack: debug.Stack()}
			}
		}
	}()
	f()
}

func (v *genericVec) Reset(seed uint64) {
	v.seed = seed
	for i := range v.n {
		v.rng[i] = NewRNG(seed, uint64(i))
		v.games[i] = 0
		v.ended[i] = false
	}
	v.ResetContinue()
}

func (v *genericVec) ResetContinue() {
	v.guard(func() {
		for i := range v.n {
			v.episode[i] = 0
			v.done[i] = 0
			clear(v.rewards[i*v.p : (i+1)*v.p])
			clear(v.scores[i*v.p : (i+1)*v.p])
			v.newGame(i)
			v.playOpponents(i)
			v.emit(i)
		}
	})
	v.rewrite = v.target
}

// newGame starts env i's next game in cur, keeping a finished one in prev.
func (v *genericVec) newGame(i int) {
	seed := gameSeed(v.seed, i, v.games[i])
	v.games[i]++
	if v.cur[i] != nil && v.cur[i].IsTerminal() {
		v.cur[i], v.prev[i] = v.prev[i], v.cur[i]
		v.ended[i] = true
	}
	if r, ok := v.cur[i].(Resetter); ok && v.cur[i] != nil {
		r.Reset(seed)
		return
	}
	v.cur[i] = v.g.NewInitialState(seed)
}

func (v *genericVec) Step(actions []int32) error {
	if v.closed {
		return errors.New("vec: closed")
	}
	if v.failed != nil {
		return v.failed
	}
	if len(actions) != v.n {
		return fmt.Errorf("%d actions for %d envs", len(actions), v.n)
	}
	for i, a := range actions {
		if a == Skip {
			continue
		}
		if a < 0 || int(a) >= v.a || v.mask[i*v.a+int(a)] == 0 {
			return &IllegalActionError{Env: i, Player: int(v.player[i]), Action: int(a), Legal: LegalActions(v.cur[i])}
		}
	}
	v.guard(func() {
		for i, a := range actions {
			rew := v.rewards[i*v.p : (i+1)*v.p]
			clear(rew)
			if v.done[i] != 0 {
				clear(v.scores[i*v.p : (i+1)*v.p])
				v.done[i] = 0
			}
			if a == Skip {
				if v.rewrite { // write the unchanged state's row (a caller's buffer, or the own one after one)
					v.emit(i)
				}
				continue
			}
			v.play(i, int(a))
			v.playOpponents(i)
			v.emit(i)
		}
	})
	v.rewrite = v.target
	return v.Err()
}

func (v *genericVec) playOpponents(i int) {
	for s := v.cur[i]; !s.IsTerminal() && !v.learner[s.CurrentPlayer()]; s = v.cur[i] {
		v.play(i, v.bots[s.CurrentPlayer()].Act(s, &v.rng[i]))
	}
}

// play applies a to env i, adds the change of returns to the rewards, and
// on the game's end reports it and starts the next.
func (v *genericVec) play(i int, a int) {
	s := v.cur[i]
	before, after := v.ret[:v.p], v.ret[v.p:]
	s.WriteReturns(before)
	s.ApplyUnchecked(a)
	s.WriteReturns(after)
	rew := v.rewards[i*v.p : (i+1)*v.p]
	var sum float64
	for seat := range v.p {
		after[seat] -= before[seat]
		sum += after[seat]
	}
	for seat := range v.p {
		r := after[seat]
		if v.cfg.Reward == RewardZeroSum {
			r = ZeroSum(r, sum, v.p)
		}
		rew[seat] += float32(r)
	}
	if !s.IsTerminal() {
		return
	}
	v.done[i] = 1
	s.WriteReturns(after)
	for seat := range v.p {
		v.scores[i*v.p+seat] = int32(math.Round(after[seat]))
	}
	v.episode[i]++
	v.newGame(i)
}

func (v *genericVec) emit(i int) {
	s := v.cur[i]
	p := s.CurrentPlayer()
	v.player[i] = int8(p)
	m := v.mask[i*v.a : (i+1)*v.a]
	s.WriteMask(m)
	if v.cfg.Packed {
		s.WriteObservation(v.scratch, p)
		pk := &v.packing
		obs.PackBits(v.bits[i*pk.Bytes:(i+1)*pk.Bytes], v.scratch)
		pk.PackExtra(v.extra[i*pk.ExtraBytes:(i+1)*pk.ExtraBytes], v.scratch)
		mb := obs.PackedLen(v.a)
		obs.PackBits(v.maskBits[i*mb:(i+1)*mb], m)
		return
	}
	s.WriteObservation(v.obsB[i*v.d:(i+1)*v.d], p)
}

func (v *genericVec) SetObsTarget(dst []uint8) error {
	if dst == nil {
		v.obsB, v.target = v.obsOwn, false
		return nil
	}
	if v.cfg.Packed {
		return errors.New("vec: a packed Vec has no observation rows to redirect")
	}
	if len(dst) != len(v.obsOwn) {
		return fmt.Errorf("vec: observation target of %d bytes, want %d (N x D)", len(dst), len(v.obsOwn))
	}
	v.obsB, v.target, v.rewrite = dst, true, true
	return nil
}

func (v *genericVec) Record(k int) (finished, current *Record, err error) {
	if k < 0 || k >= v.n {
		return nil, nil, &ConfigError{"k", k, fmt.Sprintf("env must be 0..%d", v.n-1)}
	}
	if v.ended[k] && v.episode[k] > 0 {
		finished = RecordOf(v.prev[k])
	}
	return finished, RecordOf(v.cur[k]), nil
}
