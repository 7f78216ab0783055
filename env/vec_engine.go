package env

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/davidgoliath/dgenv/obs"
)

// engine is the batch engine of every game (NewVec): N states stepped by
// worker goroutines, each a contiguous chunk of envs, into preallocated
// structure-of-arrays buffers. Skip, auto-reset, observation targets,
// rewards, scores, episode counts and records are written here once; a
// game's speed or exactness comes through the optional interfaces of
// vec_optional.go, checked once in newEngine.
type engine struct {
	typ        *Type // g.Type(), read per step by the zero_sum reward
	g          Game
	n, p, a, d int
	learner    []bool
	bots       []Bot // per seat, nil for learner seats
	seats      []int
	cfg        VecConfig

	cur    []State // env i's game in progress
	prev   []State // env i's last finished game (nil for a StreamGame: its states keep their records)
	ended  []bool  // prev holds a finished game
	rng    []RNG   // env i's bots' stream
	seed   uint64
	games  []uint64 // games started in env i since the reset
	stream bool     // the states are StreamStates
	reward bool     // the states are StepRewarders
	// rewarders is cur as StepRewarders, for a StreamGame's (a state per
	// env for good): no type assertion per action
	rewarders []StepRewarder
	rows      []RowWriter // likewise cur as RowWriters
	bitsW     bool        // packed, and the states are BitsWriters

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

	actions []int32  // the batch being stepped
	mode    int      // what the workers do: opStep, opReset
	scratch []worker // per worker: its chunk's scratch
	work    sync.WaitGroup
	wake    []chan struct{}
	closed  bool
	// failed is the first panic of a reset or step (a bot's, say), caught
	// in whichever goroutine it happened; the engine is broken after it.
	failed atomic.Pointer[PanicError]
}

// worker is one worker's scratch: returns before and after an action, one
// observation to pack.
type worker struct {
	ret []float64
	obs []uint8
	_   [64]byte // keep two workers' headers off one cache line
}

const (
	opStep = iota
	opReset
)

// minEnvsPerWorker keeps tiny batches on one goroutine, where a hand-off
// would cost more than the work.
const minEnvsPerWorker = 64

func newEngine(g Game, cfg VecConfig) (*engine, error) {
	p := g.NumPlayers()
	seats, err := cfg.Check(p)
	if err != nil {
		return nil, err
	}
	cfg.LearnerSeats = seats
	n, a, d := cfg.NumEnvs, g.NumDistinctActions(), g.Observation().Size
	v := &engine{g: g, typ: g.Type(), n: n, p: p, a: a, d: d, cfg: cfg, learner: make([]bool, p),
		cur: make([]State, n), rng: make([]RNG, n), mask: make([]uint8, n*a),
		player: make([]int8, n), rewards: make([]float32, n*p), done: make([]uint8, n),
		scores: make([]int32, n*p), episode: make([]int64, n), actions: make([]int32, n)}
	for s := range p {
		v.learner[s] = len(seats) == 0 || slices.Contains(seats, s)
		if v.learner[s] {
			v.seats = append(v.seats, s)
		}
	}
	v.bots = cfg.SeatBots(p, v.learner)
	var probe State // a state of g, for what its states implement
	if sg, ok := g.(StreamGame); ok {
		v.stream = true
		for i, s := range sg.NewStreamStates(n) {
			v.cur[i] = s
		}
		probe = v.cur[0]
	} else {
		v.prev, v.ended, v.games = make([]State, n), make([]bool, n), make([]uint64, n)
		probe = g.NewInitialState(gameSeed(cfg.Seed, 0, 0))
	}
	_, v.reward = probe.(StepRewarder)
	if v.reward && v.stream {
		v.rewarders = make([]StepRewarder, n)
		for i, s := range v.cur {
			v.rewarders[i] = s.(StepRewarder)
		}
	}
	if _, ok := probe.(RowWriter); ok && v.stream {
		v.rows = make([]RowWriter, n)
		for i, s := range v.cur {
			v.rows[i] = s.(RowWriter)
		}
	}
	w := cfg.Workers
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	w = min(w, max(1, n/minEnvsPerWorker))
	v.scratch = make([]worker, w)
	for k := range v.scratch {
		v.scratch[k].ret = make([]float64, 2*p)
	}
	if cfg.Packed {
		_, v.bitsW = probe.(BitsWriter)
		v.packing = g.Observation().Packing()
		v.bits = make([]uint8, n*v.packing.Bytes)
		v.extra = make([]uint8, n*v.packing.ExtraBytes)
		v.maskBits = make([]uint8, n*obs.PackedLen(a))
		if !v.bitsW {
			for k := range v.scratch {
				v.scratch[k].obs = make([]uint8, d)
			}
		}
	} else {
		v.obsOwn = make([]uint8, n*d)
		v.obsB = v.obsOwn
	}
	v.wake = make([]chan struct{}, w-1)
	for k := range v.wake {
		v.wake[k] = make(chan struct{})
		go v.worker(k+1, v.wake[k])
	}
	v.Reset(cfg.Seed)
	if err := v.Err(); err != nil {
		v.Close()
		return nil, err
	}
	return v, nil
}

func (v *engine) Game() Game           { return v.g }
func (v *engine) NumEnvs() int         { return v.n }
func (v *engine) LearnerSeats() []int  { return slices.Clone(v.seats) }
func (v *engine) Obs() []uint8         { return v.obsB }
func (v *engine) Mask() []uint8        { return v.mask }
func (v *engine) Player() []int8       { return v.player }
func (v *engine) Rewards() []float32   { return v.rewards }
func (v *engine) Done() []uint8        { return v.done }
func (v *engine) Scores() []int32      { return v.scores }
func (v *engine) Episode() []int64     { return v.episode }
func (v *engine) ObsBits() []uint8     { return v.bits }
func (v *engine) ObsExtra() []uint8    { return v.extra }
func (v *engine) MaskBits() []uint8    { return v.maskBits }
func (v *engine) Packing() obs.Packing { return v.packing }
func (v *engine) State(k int) State    { return v.cur[k] }

// Close stops the worker goroutines. The buffers stay readable.
func (v *engine) Close() {
	if v.closed {
		return
	}
	v.closed = true
	for _, c := range v.wake {
		close(c)
	}
}

func (v *engine) Err() error {
	if p := v.failed.Load(); p != nil {
		return p
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

// Reset starts a new game in every env, with each env's streams derived
// from (seed, env index). A panic inside it (a bot's) breaks the engine.
func (v *engine) Reset(seed uint64) {
	v.seed = seed
	for i := range v.n {
		if v.stream {
			v.rng[i] = v.cur[i].(StreamState).StartStream(seed, i)
		} else {
			v.rng[i] = NewRNG(seed, uint64(i))
			v.games[i] = 0
			v.ended[i] = false
		}
	}
	v.ResetContinue()
}

// ResetContinue starts a new game in every env, continuing each env's
// streams, and zeroes the episode counters.
func (v *engine) ResetContinue() {
	clear(v.episode)
	v.run(opReset)
	v.rewrite = v.target
}

// SetObsTarget: see Vec. Every row is written at every Reset and Step
// while a target is set, a skipped env's too (encoded again from its
// unchanged state), so dst needs no earlier contents.
func (v *engine) SetObsTarget(dst []uint8) error {
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

// Step: see Vec. Every action is checked first; a refused batch changes
// nothing.
func (v *engine) Step(actions []int32) error {
	if v.closed {
		return errors.New("vec: closed")
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
		if a < 0 || int(a) >= v.a || v.mask[i*v.a+int(a)] == 0 {
			return &IllegalActionError{Env: i, Player: int(v.player[i]), Action: int(a), Legal: LegalActions(v.cur[i])}
		}
	}
	copy(v.actions, actions)
	v.run(opStep)
	v.rewrite = v.target
	return v.Err()
}

// run does v.mode over all envs, split in contiguous chunks over the
// workers (this goroutine takes the first). A broken engine does nothing.
func (v *engine) run(mode int) {
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

func (v *engine) worker(id int, wake chan struct{}) {
	for range wake {
		v.safeChunk(id)
		v.work.Done()
	}
}

// safeChunk runs chunk, turning a panic into v.failed: a panic in a worker
// goroutine would otherwise end the whole process.
func (v *engine) safeChunk(id int) {
	defer func() {
		if p := recover(); p != nil {
			v.failed.CompareAndSwap(nil, Recovered(p))
		}
	}()
	v.chunk(id)
}

func (v *engine) chunk(id int) {
	w := len(v.scratch)
	lo, hi := id*v.n/w, (id+1)*v.n/w
	sc := &v.scratch[id]
	switch v.mode {
	case opStep:
		for i := lo; i < hi; i++ {
			v.stepEnv(i, sc)
		}
	case opReset:
		for i := lo; i < hi; i++ {
			v.resetEnv(i, sc)
		}
	}
}

func (v *engine) resetEnv(i int, sc *worker) {
	if !v.stream && v.prev[i] == nil {
		// The state the first finished game swaps in, made here rather
		// than in a step: a Resetter game then never allocates a state
		// while stepping.
		v.prev[i] = v.g.NewInitialState(gameSeed(v.seed, i, 0))
	}
	clear(v.rewards[i*v.p : (i+1)*v.p])
	clear(v.scores[i*v.p : (i+1)*v.p])
	v.done[i] = 0
	v.newGame(i, true)
	v.playOpponents(i, sc)
	v.emit(i, sc)
}

func (v *engine) stepEnv(i int, sc *worker) {
	clear(v.rewards[i*v.p : (i+1)*v.p])
	if v.done[i] != 0 {
		clear(v.scores[i*v.p : (i+1)*v.p])
		v.done[i] = 0
	}
	a := v.actions[i]
	if a == Skip {
		if v.rewrite { // write the unchanged state's row (a caller's buffer, or the own one after one)
			v.emit(i, sc)
		}
		return
	}
	v.play(i, int(a), sc)
	v.playOpponents(i, sc)
	v.emit(i, sc)
}

// newGame starts env i's next game: restart at a reset, otherwise after a
// game ended (kept for Record).
func (v *engine) newGame(i int, restart bool) {
	if v.stream {
		v.cur[i].(StreamState).NextGame(restart)
		return
	}
	seed := gameSeed(v.seed, i, v.games[i])
	v.games[i]++
	if v.cur[i] == nil {
		v.cur[i] = v.g.NewInitialState(seed)
		return
	}
	if v.cur[i].IsTerminal() {
		v.cur[i], v.prev[i] = v.prev[i], v.cur[i]
		v.ended[i] = true
	}
	if r, ok := v.cur[i].(Resetter); ok {
		r.Reset(seed)
		return
	}
	v.cur[i] = v.g.NewInitialState(seed)
}

func (v *engine) playOpponents(i int, sc *worker) {
	if len(v.seats) == v.p { // self-play: every seat is the caller's
		return
	}
	for s := v.cur[i]; !s.IsTerminal() && !v.learner[s.CurrentPlayer()]; s = v.cur[i] {
		v.play(i, v.bots[s.CurrentPlayer()].Act(s, &v.rng[i]), sc)
	}
}

// play applies a to env i, adds its rewards, and on the game's end
// reports it and starts the next.
func (v *engine) play(i int, a int, sc *worker) {
	s := v.cur[i]
	rew := v.rewards[i*v.p : (i+1)*v.p]
	var terminal bool
	switch {
	case v.rewarders != nil:
		terminal = v.rewarders[i].ApplyRewarded(a, v.cfg.Reward, rew)
	case v.reward:
		terminal = s.(StepRewarder).ApplyRewarded(a, v.cfg.Reward, rew)
	default:
		before, after := sc.ret[:v.p], sc.ret[v.p:]
		s.WriteReturns(before)
		s.ApplyUnchecked(a)
		s.WriteReturns(after)
		var sum float64
		for seat := range v.p {
			after[seat] -= before[seat]
			sum += after[seat]
		}
		for seat := range v.p {
			r := after[seat]
			if v.cfg.Reward == RewardZeroSum {
				r = ZeroSumReward(v.typ, r, sum, v.p)
			}
			rew[seat] += float32(r)
		}
		terminal = s.IsTerminal()
	}
	if !terminal {
		return
	}
	v.done[i] = 1
	ret := sc.ret[:v.p]
	s.WriteReturns(ret)
	for seat := range v.p {
		v.scores[i*v.p+seat] = int32(math.Round(ret[seat]))
	}
	v.episode[i]++
	v.newGame(i, false)
}

// emit writes env i's player, mask and observation.
func (v *engine) emit(i int, sc *worker) {
	m := v.mask[i*v.a : (i+1)*v.a]
	if v.rows != nil {
		var row []uint8
		if !v.cfg.Packed {
			row = v.obsB[i*v.d : (i+1)*v.d]
		}
		p := v.rows[i].WriteRow(m, row)
		v.player[i] = int8(p)
		if v.cfg.Packed {
			v.emitPacked(i, p, m, sc)
		}
		return
	}
	s := v.cur[i]
	p := s.CurrentPlayer()
	v.player[i] = int8(p)
	s.WriteMask(m)
	if !v.cfg.Packed {
		s.WriteObservation(v.obsB[i*v.d:(i+1)*v.d], p)
		return
	}
	v.emitPacked(i, p, m, sc)
}

// emitPacked writes env i's packed observation (of seat p) and mask bits.
func (v *engine) emitPacked(i, p int, m []uint8, sc *worker) {
	s := v.cur[i]
	pk := &v.packing
	bits, extra := v.bits[i*pk.Bytes:(i+1)*pk.Bytes], v.extra[i*pk.ExtraBytes:(i+1)*pk.ExtraBytes]
	if v.bitsW {
		s.(BitsWriter).WriteObservationBits(bits, extra, p)
	} else {
		s.WriteObservation(sc.obs, p)
		obs.PackBits(bits, sc.obs)
		pk.PackExtra(extra, sc.obs)
	}
	mb := obs.PackedLen(v.a)
	obs.PackBits(v.maskBits[i*mb:(i+1)*mb], m)
}

func (v *engine) Record(k int) (finished, current *Record, err error) {
	if k < 0 || k >= v.n {
		return nil, nil, &ConfigError{"k", k, fmt.Sprintf("env must be 0..%d", v.n-1)}
	}
	if v.stream {
		finished, current = v.cur[k].(StreamState).Records()
		if v.episode[k] == 0 {
			finished = nil
		}
		return finished, current, nil
	}
	if v.ended[k] && v.episode[k] > 0 {
		finished = RecordOf(v.prev[k])
	}
	return finished, RecordOf(v.cur[k]), nil
}
