package card

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/obs"
)

// RewardMode says how deal points become rewards: the game interface's
// modes (env.RewardMode), one definition for every game. For the card
// game a seat's return changes at the end of each deal, by its deal points.
type RewardMode = env.RewardMode

const (
	// RewardPoints gives each seat its deal points at the end of every deal.
	RewardPoints = env.RewardPoints
	// RewardZeroSum gives each seat its deal points minus the mean of the others'.
	RewardZeroSum = env.RewardZeroSum
)

// ParseRewardMode reads "points" (or "") or "zero_sum".
func ParseRewardMode(s string) (RewardMode, error) { return env.ParseRewardMode(s) }

// VecConfig configures a VecEnv.
type VecConfig struct {
	Params  Params
	NumEnvs int
	Seed    uint64
	// LearnerSeats are the seats the caller plays; nil or empty means all
	// seats (self-play). Other seats are played by Opponent inside Step.
	LearnerSeats []int
	// Opponent plays the non-learner seats ("random", "heuristic" or any
	// registered bot); required when LearnerSeats leaves seats over.
	Opponent string
	// Opponents, instead of Opponent, names a bot per seat: "" on learner
	// seats (a table of different bots). With no LearnerSeats, the seats
	// whose entry is "" are the learner seats.
	Opponents []string
	Reward    RewardMode
	// Workers is the number of goroutines stepping the batch; 0 means GOMAXPROCS.
	Workers int
	// Packed has the workers write the observation in its bit-packed
	// transport form (ObsBits and ObsExtra, see obs.Packing), straight from
	// each game's bit sets, instead of the byte tensor: Obs is then nil.
	// MaskBits holds the mask's bits; Mask is still written.
	Packed bool

	// Bot, when set, plays the opponent seats (Opponent is then only its
	// name); otherwise Opponent names one of this package's bots (Bots).
	// A server passes the bot its game registry made. Bots, when set, are
	// the bots of Opponents, one per seat (nil on learner seats), likewise.
	Bot  StateBot
	Bots []StateBot
}

// MaxNumEnvs bounds a VecEnv's size.
const MaxNumEnvs = 1 << 20

// VecEnv steps N games at once, EnvPool-style: every output lives in a
// preallocated structure-of-arrays buffer that each env writes its slot of.
// Results depend only on the seed and actions, never on the worker count.
// A VecEnv is not safe for concurrent use.
type VecEnv struct {
	cfg     VecConfig
	game    *Game
	layout  Layout
	n, p    int
	learner [MaxPlayers]bool
	bots    [MaxPlayers]StateBot // per seat, nil on learner seats

	states []State
	botRNG []RNG
	recs   [][2]Record
	recCur []uint8

	obsBuf  []uint8
	obsOwn  []uint8 // the VecEnv's own observation buffer (obsBuf when no target is set)
	target  bool    // obsBuf is a caller's (SetObsTarget)
	rewrite bool    // write every env's row at the next Step (obsOwn missed steps of a target)
	mask    []uint8
	packing obs.Packing
	obsBits []uint8 // [N, packing.Bytes] when cfg.Packed
	obsXtra []uint8 // [N, packing.ExtraBytes] when cfg.Packed
	maskBit []uint8 // [N, MaskBytes] when cfg.Packed
	player  []int8
	rewards []float32
	done    []uint8
	scores  []int32
	episode []int64

	actions []int32 // the batch being stepped
	mode    int     // what the workers do: opStep, opReset
	work    sync.WaitGroup
	wake    []chan struct{}
	closed  bool
	// failed is the first panic of a reset or step (a bot's, say), caught
	// in whichever goroutine it happened; the VecEnv is broken after it.
	failed atomic.Pointer[PanicError]
}

// PanicError is a panic caught inside a reset or step: in a worker
// goroutine, a bot, or a goroutine a bot started. The VecEnv that caught it
// is broken for good (its games are half-stepped): Step returns this error
// and Err reports it. It is spiel's, the same for every game.
type PanicError = env.PanicError

// Recovered turns a value from recover() into a *PanicError, keeping the
// stack of a panic already caught and passed on. Call it in the deferred
// function that recovered, so the stack is the panicking one.
func Recovered(p any) *PanicError {
	if e, ok := p.(*PanicError); ok {
		return e
	}
	return &PanicError{Value: p, Stack: debug.Stack()}
}

const (
	opStep = iota
	opReset
)

// NewVecEnv builds a batch and resets it with cfg.Seed.
func NewVecEnv(cfg VecConfig) (*VecEnv, error) {
	g, err := NewGame(cfg.Params)
	if err != nil {
		return nil, err
	}
	cfg.Params = g.params
	p := g.params.Players
	if cfg.NumEnvs < 1 || cfg.NumEnvs > MaxNumEnvs {
		return nil, fmt.Errorf("num_envs = %d: must be 1..%d", cfg.NumEnvs, MaxNumEnvs)
	}
	v := &VecEnv{cfg: cfg, game: g, layout: g.layout, n: cfg.NumEnvs, p: p}
	var seats []int
	for _, s := range cfg.LearnerSeats {
		if s < 0 || s >= p {
			return nil, fmt.Errorf("learner seat %d: must be 0..%d", s, p-1)
		}
		if slices.Contains(seats, s) {
			return nil, fmt.Errorf("learner seat %d given twice", s)
		}
		seats = append(seats, s)
	}
	slices.Sort(seats)
	if cfg.Opponents != nil {
		if cfg.Opponent != "" || cfg.Bot != nil {
			return nil, errors.New("opponents: give opponent (one bot for every other seat) or opponents (a bot per seat), not both")
		}
		if seats, err = env.CheckOpponents(p, seats, cfg.Opponents); err != nil {
			return nil, err
		}
	}
	if len(seats) == p {
		seats = nil
	}
	v.cfg.LearnerSeats = seats
	for s := range p {
		v.learner[s] = len(seats) == 0 || slices.Contains(seats, s)
	}
	if len(seats) > 0 && cfg.Opponents == nil && cfg.Opponent == "" && cfg.Bot == nil {
		return nil, errors.New("opponent: required when learner_seats leaves seats to play")
	}
	if cfg.Bot == nil && cfg.Opponent != "" {
		if cfg.Bot, err = newBot(cfg.Opponent); err != nil {
			return nil, err
		}
	}
	if cfg.Bots != nil && len(cfg.Bots) != len(cfg.Opponents) {
		return nil, fmt.Errorf("opponents: %d bots for %d names", len(cfg.Bots), len(cfg.Opponents))
	}
	for s := range p {
		if v.learner[s] {
			continue
		}
		name, b := cfg.Opponent, cfg.Bot
		if cfg.Opponents != nil {
			name, b = cfg.Opponents[s], nil
			if cfg.Bots != nil {
				b = cfg.Bots[s]
			}
		}
		if b == nil {
			if b, err = newBot(name); err != nil {
				return nil, err
			}
		}
		v.bots[s] = b
	}
	if cfg.Reward != RewardPoints && cfg.Reward != RewardZeroSum {
		return nil, fmt.Errorf("reward mode %d unknown", cfg.Reward)
	}
	n := v.n
	v.states = make([]State, n)
	v.botRNG = make([]RNG, n)
	v.recs = make([][2]Record, n)
	v.recCur = make([]uint8, n)
	if !cfg.Packed {
		v.obsOwn = make([]uint8, n*v.layout.Size)
		v.obsBuf = v.obsOwn
	}
	v.mask = make([]uint8, n*NumActions)
	if cfg.Packed {
		v.packing = v.layout.Packing()
		v.obsBits = make([]uint8, n*v.packing.Bytes)
		v.obsXtra = make([]uint8, n*v.packing.ExtraBytes)
		v.maskBit = make([]uint8, n*MaskBytes)
	}
	v.player = make([]int8, n)
	v.rewards = make([]float32, n*p)
	v.done = make([]uint8, n)
	v.scores = make([]int32, n*p)
	v.episode = make([]int64, n)
	v.actions = make([]int32, n)
	for i := range v.recs {
		for k := range v.recs[i] {
			v.recs[i][k].reset(g.params)
		}
	}
	w := cfg.Workers
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	w = min(w, max(1, n/minEnvsPerWorker))
	v.wake = make([]chan struct{}, w-1)
	for i := range v.wake {
		v.wake[i] = make(chan struct{})
		go v.worker(i+1, v.wake[i])
	}
	v.Reset(cfg.Seed)
	if err := v.Err(); err != nil {
		v.Close()
		return nil, err
	}
	return v, nil
}

// minEnvsPerWorker keeps tiny batches on one goroutine, where a hand-off
// would cost more than the work.
const minEnvsPerWorker = 64

// Close stops the worker goroutines. The buffers stay readable.
func (v *VecEnv) Close() {
	if v.closed {
		return
	}
	v.closed = true
	for _, c := range v.wake {
		close(c)
	}
}

// Err returns the panic that broke the VecEnv (a *PanicError), or nil.
func (v *VecEnv) Err() error {
	if p := v.failed.Load(); p != nil {
		return p
	}
	return nil
}

// Config returns the configuration (defaults filled in).
func (v *VecEnv) Config() VecConfig { return v.cfg }

// Game returns the game configuration.
func (v *VecEnv) Game() *Game { return v.game }

// Layout is the observation layout.
func (v *VecEnv) Layout() Layout { return v.layout }

// NumEnvs is N.
func (v *VecEnv) NumEnvs() int { return v.n }

// LearnerSeats are the seats the caller plays, ascending.
func (v *VecEnv) LearnerSeats() []int {
	var out []int
	for s := range v.p {
		if v.learner[s] {
			out = append(out, s)
		}
	}
	return out
}

// Output buffers, valid until the next Reset or Step, which overwrite them.
// Seat-indexed rows are in absolute seat order.
func (v *VecEnv) Obs() []uint8       { return v.obsBuf }  // [N, D] observation of the seat to act (nil if Packed)
func (v *VecEnv) Mask() []uint8      { return v.mask }    // [N, 90] 1 = legal
func (v *VecEnv) Player() []int8     { return v.player }  // [N] seat to act
func (v *VecEnv) Rewards() []float32 { return v.rewards } // [N, P] reward of this step
func (v *VecEnv) Done() []uint8      { return v.done }    // [N] 1 where this step ended a game
func (v *VecEnv) Scores() []int32    { return v.scores }  // [N, P] totals of the game that just ended
func (v *VecEnv) Episode() []int64   { return v.episode } // [N] games finished so far

// The packed outputs (nil unless VecConfig.Packed): bits of Obs, the bytes
// of its sections above 1 (Packing().Extra) and bits of Mask.
func (v *VecEnv) ObsBits() []uint8  { return v.obsBits } // [N, Packing().Bytes]
func (v *VecEnv) ObsExtra() []uint8 { return v.obsXtra } // [N, Packing().ExtraBytes]
func (v *VecEnv) MaskBits() []uint8 { return v.maskBit } // [N, MaskBytes]

// Packing describes ObsBits and ObsExtra (zero unless VecConfig.Packed).
func (v *VecEnv) Packing() obs.Packing { return v.packing }

// MaskBytes is the size of one packed legal-action mask: 90 bits.
const MaskBytes = (NumActions + 7) / 8

// State gives read access to env i's game. Callers must not modify it.
func (v *VecEnv) State(i int) *State { return &v.states[i] }

// Reset starts a new game in every env, with each env's RNG streams
// re-derived from (seed, env index), and zeroes the episode counters. A
// panic inside it (a bot's) breaks the VecEnv: see Err.
func (v *VecEnv) Reset(seed uint64) {
	for i := range v.n {
		v.states[i] = State{game: v.game, rng: NewRNG(seed, uint64(i)*2)}
		v.botRNG[i] = NewRNG(seed, uint64(i)*2+1)
		v.recCur[i] = 0
		v.states[i].rec = &v.recs[i][0]
		v.recs[i][1].reset(v.game.params)
		v.episode[i] = 0
	}
	v.run(opReset)
	v.rewrite = v.target
}

// ResetContinue starts a new game in every env, continuing each env's RNG
// streams (so the new games differ from the ones before).
func (v *VecEnv) ResetContinue() {
	for i := range v.n {
		v.episode[i] = 0
	}
	v.run(opReset)
	v.rewrite = v.target
}

// SetObsTarget makes the following Resets and Steps write the observations
// into dst ([N, D], row i for env i) instead of the VecEnv's own buffer,
// until SetObsTarget(nil); Obs() returns dst meanwhile. Every row is written
// at every Reset and Step, a skipped env's too (its observation is encoded
// again from its unchanged state), so dst needs no earlier contents. It is
// for a caller that owns the memory its answers go to (libdgenv writes
// straight into the numpy array a step returns): one copy of the largest
// output less per step. After SetObsTarget(nil) the own buffer is written
// whole again by the next Reset or Step (until then Obs() holds old rows).
// A packed VecEnv has no observation rows: it refuses.
func (v *VecEnv) SetObsTarget(dst []uint8) error {
	if dst == nil {
		v.obsBuf, v.target = v.obsOwn, false
		return nil
	}
	if v.cfg.Packed {
		return errors.New("vecenv: a packed VecEnv has no observation rows to redirect")
	}
	if len(dst) != len(v.obsOwn) {
		return fmt.Errorf("vecenv: observation target of %d bytes, want %d (N x D)", len(dst), len(v.obsOwn))
	}
	v.obsBuf, v.target, v.rewrite = dst, true, true
	return nil
}

// Skip, as env i's action in Step, leaves env i as it is for that step:
// nothing is played, its rewards are 0, done is 0, and its observation, mask
// and player stay those of the previous answer. A client whose auto-reset
// comes one step after the end (Gymnasium's NEXT_STEP) sends it for the envs
// whose next game it has not shown yet.
const Skip = -1

// Step plays actions[i] in env i for the seat to act, then (with learner
// seats) the opponents until a learner seat is to act. An env whose game
// ends is reset in the same step (done = 1, scores set). Every action is
// checked first: if any is illegal, Step returns an *IllegalActionError
// naming the first such env and nothing changes. An action of Skip leaves
// its env as it is (see Skip).
func (v *VecEnv) Step(actions []int32) error {
	if v.closed {
		return errors.New("vecenv: closed")
	}
	if p := v.failed.Load(); p != nil {
		return p
	}
	if len(actions) != v.n {
		return fmt.Errorf("%d actions for %d envs", len(actions), v.n)
	}
	for i, a := range actions {
		if a == Skip {
			continue
		}
		if a < 0 || a >= NumActions || v.mask[i*NumActions+int(a)] == 0 {
			return &IllegalActionError{Env: i, Player: int(v.player[i]), Action: int(a), Legal: v.states[i].LegalActions()}
		}
	}
	copy(v.actions, actions)
	v.run(opStep)
	v.rewrite = v.target
	if p := v.failed.Load(); p != nil {
		return p
	}
	return nil
}

// run does v.mode over all envs, split in contiguous chunks over the
// workers. A broken VecEnv does nothing.
func (v *VecEnv) run(mode int) {
	if v.failed.Load() != nil {
		return
	}
	v.mode = mode
	v.work.Add(len(v.wake))
	for _, c := range v.wake {
		c <- struct{}{}
	}
	v.safeChunk(0)
	v.work.Wait()
}

func (v *VecEnv) worker(id int, wake chan struct{}) {
	for range wake {
		v.safeChunk(id)
		v.work.Done()
	}
}

// safeChunk runs chunk, turning a panic into v.failed: a panic in a worker
// goroutine would otherwise end the whole process.
func (v *VecEnv) safeChunk(id int) {
	defer func() {
		if p := recover(); p != nil {
			v.failed.CompareAndSwap(nil, Recovered(p))
		}
	}()
	v.chunk(id)
}

func (v *VecEnv) chunk(id int) {
	w := len(v.wake) + 1
	lo, hi := id*v.n/w, (id+1)*v.n/w
	switch v.mode {
	case opStep:
		for i := lo; i < hi; i++ {
			v.stepEnv(i)
		}
	case opReset:
		for i := lo; i < hi; i++ {
			v.resetEnv(i)
		}
	}
}

func (v *VecEnv) resetEnv(i int) {
	s := &v.states[i]
	clear(v.rewards[i*v.p : (i+1)*v.p])
	clear(v.scores[i*v.p : (i+1)*v.p])
	v.done[i] = 0
	v.recCur[i] = 0
	s.rec = &v.recs[i][0]
	s.newGame()
	v.playOpponents(i)
	v.emit(i)
}

func (v *VecEnv) stepEnv(i int) {
	rew := v.rewards[i*v.p : (i+1)*v.p]
	clear(rew)
	if v.done[i] != 0 {
		clear(v.scores[i*v.p : (i+1)*v.p])
		v.done[i] = 0
	}
	if v.actions[i] == Skip {
		if v.rewrite { // its row has to be written (the state is unchanged)
			v.emit(i)
		}
		return
	}
	v.play(i, Action(v.actions[i]))
	v.playOpponents(i)
	v.emit(i)
}

func (v *VecEnv) playOpponents(i int) {
	s := &v.states[i]
	for !v.learner[s.current()] {
		v.play(i, v.bots[s.current()].ActState(s, &v.botRNG[i]))
	}
}

// play applies one action to env i, adds deal rewards, and on the game's
// end reports it and starts the next game.
func (v *VecEnv) play(i int, a Action) {
	s := &v.states[i]
	s.apply(a)
	if !s.dealEnded {
		return
	}
	rew := v.rewards[i*v.p : (i+1)*v.p]
	var sum int32
	for seat := range v.p {
		sum += s.lastDeal[seat]
	}
	for seat := range v.p {
		r := float32(s.lastDeal[seat])
		if v.cfg.Reward == RewardZeroSum {
			r = env.ZeroSum(r, float32(sum), v.p)
		}
		rew[seat] += r
	}
	if !s.terminal {
		return
	}
	v.done[i] = 1
	copy(v.scores[i*v.p:(i+1)*v.p], s.b.Totals[:v.p])
	v.episode[i]++
	v.recCur[i] ^= 1
	s.rec = &v.recs[i][v.recCur[i]]
	s.newGame()
}

func (v *VecEnv) emit(i int) {
	s := &v.states[i]
	p := s.current()
	v.player[i] = int8(p)
	m := v.mask[i*NumActions : (i+1)*NumActions]
	s.WriteMask(m)
	if v.cfg.Packed {
		pk := &v.packing
		v.layout.EncodeBits(v.obsBits[i*pk.Bytes:(i+1)*pk.Bytes], v.obsXtra[i*pk.ExtraBytes:(i+1)*pk.ExtraBytes], &s.b, p)
		obs.PackBits(v.maskBit[i*MaskBytes:(i+1)*MaskBytes], m)
		return
	}
	v.layout.EncodePlanes(v.obsBuf[i*v.layout.Size:(i+1)*v.layout.Size], &s.b, &s.pl, p)
}

// Record returns copies of env k's last finished game (nil before the first
// ends) and of the game in progress.
func (v *VecEnv) Record(k int) (finished, current *Record, err error) {
	if k < 0 || k >= v.n {
		return nil, nil, fmt.Errorf("env %d: must be 0..%d", k, v.n-1)
	}
	cur := v.recCur[k]
	v.states[k].syncRecord()
	current = v.recs[k][cur].Clone()
	if v.episode[k] > 0 {
		finished = v.recs[k][cur^1].Clone()
	}
	return finished, current, nil
}
