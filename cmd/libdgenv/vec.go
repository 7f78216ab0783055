package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"unsafe"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/server/wire"
)

// vecRequest is the JSON a caller creates a batch with: the fields of the
// server's POST /v1/sessions body (game is {"name", <params>}).
type vecRequest struct {
	Game         map[string]any `json:"game"`
	NumEnvs      *int           `json:"num_envs"`
	Seed         *uint64        `json:"seed"`
	LearnerSeats []int          `json:"learner_seats"`
	Opponent     string         `json:"opponent"`
	Opponents    []*string      `json:"opponents"` // a bot per seat, null on learner seats
	Reward       string         `json:"reward"`
	Packing      string         `json:"packing"`
	Workers      int            `json:"workers"`
	// ObsDtype "<f4" has the observation written as float32 (what most
	// models eat), converted while it is copied out; "<u1" (default) as is.
	ObsDtype string `json:"obs_dtype"`
	// MemoryBudget bounds, in bytes, what every live batch of the process
	// may come to hold at worst, this one included (default
	// env.DefaultMemoryBudget, the server's default too).
	MemoryBudget *int64 `json:"memory_budget"`
}

// reserved is the memory (env.CostOf) of every live batch of the process.
var reserved = struct {
	sync.Mutex
	bytes int64
}{}

// reserve counts cost against budget, or says why it does not fit now
// (env.PlanSession refused a batch over the whole budget).
func reserve(cost, budget int64) *env.Error {
	reserved.Lock()
	defer reserved.Unlock()
	if reserved.bytes+cost > budget {
		e := env.Errorf(env.CodeLimit, "memory_budget reached: this batch needs up to %s, and the live in-process batches hold %s of the %s memory_budget: close some, or raise memory_budget", env.MiB(cost), env.MiB(reserved.bytes), env.MiB(budget))
		return e.With("field", "memory_budget").With("limit", budget).With("bytes_needed", cost).With("bytes_in_use", reserved.bytes)
	}
	reserved.bytes += cost
	return nil
}

func release(cost int64) {
	reserved.Lock()
	reserved.bytes -= cost
	reserved.Unlock()
}

// gameRegistry is the games this library serves: the shipped ones, with
// the policies loaded by dg_load_policies as bots of the card game.
var gameRegistry = struct {
	sync.Mutex
	r *env.Registry
}{r: games.Default()}

func registry() *env.Registry {
	gameRegistry.Lock()
	defer gameRegistry.Unlock()
	return gameRegistry.r
}

// piece is one output tensor inside the caller's arena.
type piece struct {
	Name   string `json:"name"`
	Offset int    `json:"offset"` // bytes from the arena's start, a multiple of 8
	Dtype  string `json:"dtype"`
	Shape  []int  `json:"shape"`
	src    func() []byte
	f32    bool // src's bytes are written as float32
	// direct: the Vec writes this piece (the uint8 observation) straight
	// into the arena during the step (env.Vec.SetObsTarget): no copy.
	direct bool
}

// vecEnv is a batch handle: the Vec and where each output goes in the
// caller's arena (one buffer per reset or step, owned by the caller).
type vecEnv struct {
	mu     sync.Mutex
	v      env.Vec
	spec   wire.Spec
	bots   []string
	pieces []piece
	bytes  int
	// pick draws random_actions' uniform legal actions, a generator per
	// pickChunk envs: seeded from the batch's seed (and re-seeded by a
	// seeded reset) on streams of their own.
	pick    []env.RNG
	pickBad []int // per goroutine of randomActions: the first env without a legal action, or -1
	// cost is the memory reserved against the budget (env.CostOf), given
	// back by close; closed is set then, and every later call on a
	// handle already looked up answers not_found instead of touching the
	// closed Vec.
	cost   int64
	closed bool
}

// pickStream is random_actions' stream of the batch seed (apart from the
// streams the games and the bots draw from).
const pickStream = 0x7069636b // "pick"

func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// newVecEnv decodes a config, plans the batch as the server does
// (env.PlanSession) under the memory budget the config names, and builds
// it.
// splitGameSpec reads a game spec ({"name": ..., <params>}, as the
// server's "game" field): the name ("" for the default game) and the
// parameters given (nulls left out).
func splitGameSpec(spec map[string]any) (string, map[string]any, *env.Error) {
	name, isString := spec["name"].(string)
	if v, ok := spec["name"]; ok && v != nil && !isString {
		return "", nil, env.FieldError("game.name", "game.name: want a string")
	}
	given := map[string]any{}
	for k, v := range spec {
		if k != "name" && v != nil {
			given[k] = v
		}
	}
	return name, given, nil
}

func newVecEnv(body []byte) (*vecEnv, *env.Error) {
	var req vecRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, env.FieldError("", "config: %v", err)
	}
	name, given, e := splitGameSpec(req.Game)
	if e != nil {
		return nil, e
	}
	r := env.SessionRequest{Game: name, Params: given, NumEnvs: req.NumEnvs, Seed: req.Seed, LearnerSeats: req.LearnerSeats,
		Opponent: req.Opponent, Reward: req.Reward, Packing: req.Packing, ObsDtype: req.ObsDtype, Workers: req.Workers}
	if req.Opponents != nil {
		r.Opponents = make([]string, len(req.Opponents))
		for s, name := range req.Opponents {
			if name != nil {
				r.Opponents[s] = *name
			}
		}
	}
	budget := int64(env.DefaultMemoryBudget)
	if req.MemoryBudget != nil {
		if budget = *req.MemoryBudget; budget < 1 {
			return nil, env.FieldError("memory_budget", "memory_budget = %d: want a number of bytes > 0", budget)
		}
	}
	reg := registry()
	plan, e := env.PlanSession(reg, r, env.Caps{MemoryBudget: budget, MemoryBudgetName: "the whole memory_budget",
		MemoryBudgetField: "memory_budget", Seed: wire.RandomSeed})
	if e != nil {
		if e.Code == env.CodeTooLarge { // as a limit error, it says what the live batches hold
			reserved.Lock()
			e.With("bytes_in_use", reserved.bytes)
			reserved.Unlock()
		}
		return nil, e
	}
	cost := plan.Cost.Bytes
	if e := reserve(cost, budget); e != nil {
		return nil, e
	}
	v, e := plan.New()
	if e != nil {
		release(cost)
		return nil, e
	}
	// The spec tells the engine's dtype, as before; "<f4" widens the
	// observation while it is copied into the arena (its piece says so).
	ve := wrapVec(v, wire.NewSpec(plan.Game, v, plan.Config, env.ObsU1), plan.ObsDtype == env.ObsF4)
	ve.bots = reg.Bots(plan.Game.Type().Name)
	ve.cost = cost
	ve.seedPick(plan.Config.Seed)
	return ve, nil
}

func wrapVec(v env.Vec, spec wire.Spec, obsF32 bool) *vecEnv {
	n, np, na, d := spec.NumEnvs, spec.Players, spec.NumActions, spec.Obs.Shape[0]
	e := &vecEnv{v: v, spec: spec}
	add := func(name, dtype string, shape []int, src func() []byte) {
		pc := piece{Name: name, Offset: e.bytes, Dtype: dtype, Shape: shape, src: src, f32: dtype == "<f4" && name == "obs"}
		e.pieces = append(e.pieces, pc)
		size := len(src())
		if pc.f32 {
			size *= 4
		}
		e.bytes += (size + 7) &^ 7
	}
	if pk := spec.Obs.Packed; pk != nil {
		add("obs_bits", "<u1", []int{n, pk.ObsBytes}, func() []byte { return v.ObsBits() })
		add("obs_extra", "<u1", []int{n, pk.ExtraBytes}, func() []byte { return v.ObsExtra() })
		add("mask_bits", "<u1", []int{n, pk.MaskBytes}, func() []byte { return v.MaskBits() })
	} else {
		dt := "<u1"
		if obsF32 {
			dt = "<f4"
		}
		add("obs", dt, []int{n, d}, func() []byte { return v.Obs() })
		e.pieces[len(e.pieces)-1].direct = !obsF32
		add("mask", "<u1", []int{n, na}, func() []byte { return v.Mask() })
	}
	add("player", "<i1", []int{n}, func() []byte { return bytesOf(v.Player()) })
	add("rewards", "<f4", []int{n, np}, func() []byte { return bytesOf(v.Rewards()) })
	add("done", "<u1", []int{n}, func() []byte { return v.Done() })
	add("scores", "<i4", []int{n, np}, func() []byte { return bytesOf(v.Scores()) })
	add("episode", "<i8", []int{n}, func() []byte { return bytesOf(v.Episode()) })
	return e
}

// info is the spec and the arena layout, as JSON.
func (e *vecEnv) info() []byte {
	b, _ := json.Marshal(map[string]any{"spec": e.spec, "arena": map[string]any{"bytes": e.bytes, "pieces": e.pieces}, "bots": e.bots})
	return b
}

// target points the Vec's observation rows at their place in arena for the
// reset or step about to run (the direct piece); untarget undoes it.
func (e *vecEnv) target(arena []byte) {
	for i := range e.pieces {
		if pc := &e.pieces[i]; pc.direct {
			size := e.spec.NumEnvs * e.spec.Obs.Shape[0]
			if err := e.v.SetObsTarget(arena[pc.Offset : pc.Offset+size]); err != nil {
				pc.direct = false // then copied, as every other piece
			}
			return
		}
	}
}

func (e *vecEnv) untarget() { _ = e.v.SetObsTarget(nil) }

// write copies every output but the direct one into the arena (len >= e.bytes).
func (e *vecEnv) write(arena []byte) {
	for i := range e.pieces {
		pc := &e.pieces[i]
		if pc.direct {
			continue
		}
		src := pc.src()
		if !pc.f32 {
			parallelCopy(arena[pc.Offset:pc.Offset+len(src)], src)
			continue
		}
		widen(unsafe.Slice((*float32)(unsafe.Pointer(&arena[pc.Offset])), len(src)), src)
	}
}

// usable is nil, or the error of a call on a closed batch (freed while
// the call was looking it up). Called with e.mu held.
func (e *vecEnv) usable() *env.Error {
	if e.closed {
		return &env.Error{Code: env.CodeNotFound, Message: "batch handle: freed (closed while this call was on its way)"}
	}
	return nil
}

// checkArena is nil when arena is exactly the arena's bytes.
func (e *vecEnv) checkArena(arena []byte) *env.Error {
	if len(arena) != e.bytes {
		return env.FieldError("arena", "arena: %d bytes, want %d (dg_vec_info's arena.bytes)", len(arena), e.bytes)
	}
	return nil
}

func (e *vecEnv) reset(seed uint64, hasSeed bool, arena []byte) *env.Error {
	if err := e.checkArena(arena); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.usable(); err != nil {
		return err
	}
	e.target(arena)
	if hasSeed {
		e.v.Reset(seed)
		e.seedPick(seed)
	} else {
		e.v.ResetContinue()
	}
	e.untarget()
	if err := e.v.Err(); err != nil {
		return broken(err)
	}
	e.write(arena)
	return nil
}

// broken is the error of a reset or step during which the batch's env
// panicked (a bot's bug): internal, and the batch's games are half-stepped.
func broken(err error) *env.Error {
	e := env.FromEngine(err)
	e.Code = env.CodeInternal
	e.Message = fmt.Sprintf("internal error: %v: the batch is broken; close it and make a new one", err)
	return e
}

// step plays actions (one per env) and writes the answer into arena.
func (e *vecEnv) step(actions []int32, arena []byte) *env.Error {
	if err := firstError(wantLen("actions", len(actions), e.spec.NumEnvs, "int32 [num_envs]"), e.checkArena(arena)); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.usable(); err != nil {
		return err
	}
	e.target(arena)
	err := e.v.Step(actions)
	e.untarget()
	if err != nil {
		if e.v.Err() != nil {
			return broken(err)
		}
		return env.StepError(err)
	}
	e.write(arena)
	return nil
}

// randomActions writes a uniformly random legal action of every env's
// current state into actions (len NumEnvs). Env i draws from the generator
// of its chunk of pickChunk envs, so the draws do not depend on how many
// goroutines share the work (one per core on a big batch).
func (e *vecEnv) randomActions(actions []int32) *env.Error {
	if err := wantLen("actions", len(actions), e.spec.NumEnvs, "int32 [num_envs]"); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.usable(); err != nil {
		return err
	}
	mask := e.v.Mask()
	na := len(mask) / len(actions)
	chunks := len(e.pick)
	w := min(runtime.GOMAXPROCS(0), chunks)
	if w <= 1 {
		if bad := pickChunks(mask, na, actions, e.pick, 0, chunks); bad >= 0 {
			return env.FieldError("", "env %d has no legal action (%v)", bad, e.v.Err())
		}
		return nil
	}
	var wg sync.WaitGroup
	bads := e.pickBad[:w]
	for k := range w {
		lo, hi := k*chunks/w, (k+1)*chunks/w
		wg.Add(1)
		go func() {
			defer wg.Done()
			bads[k] = pickChunks(mask, na, actions, e.pick, lo, hi)
		}()
	}
	wg.Wait()
	for _, bad := range bads {
		if bad >= 0 {
			return env.FieldError("", "env %d has no legal action (%v)", bad, e.v.Err())
		}
	}
	return nil
}

// pickChunk is how many envs share one random_actions generator.
const pickChunk = 512

// seedPick gives each chunk of pickChunk envs its generator for seed.
func (e *vecEnv) seedPick(seed uint64) {
	if e.pick == nil {
		e.pick = make([]env.RNG, (e.spec.NumEnvs+pickChunk-1)/pickChunk)
		e.pickBad = make([]int, len(e.pick))
	}
	for c := range e.pick {
		e.pick[c] = env.NewRNG(seed, pickStream+uint64(c))
	}
}

// pickChunks draws the actions of chunks [lo, hi); it returns the first env
// without a legal action, or -1.
func pickChunks(mask []uint8, na int, actions []int32, rngs []env.RNG, lo, hi int) int {
	for c := lo; c < hi; c++ {
		rng := &rngs[c]
		for i := c * pickChunk; i < min((c+1)*pickChunk, len(actions)); i++ {
			a := pickRow(mask[i*na:(i+1)*na], rng)
			if a < 0 {
				return i
			}
			actions[i] = a
		}
	}
	return -1
}

// pickRow is a uniformly random index of a 1 in row (bytes 0 or 1), or -1:
// counted and found eight bytes at a time.
func pickRow(row []uint8, rng *env.RNG) int32 {
	n, i := 0, 0
	for ; i+8 <= len(row); i += 8 {
		n += bits.OnesCount64(binary.LittleEndian.Uint64(row[i:]))
	}
	for _, m := range row[i:] {
		n += int(m)
	}
	if n == 0 {
		return -1
	}
	k := rng.IntN(n)
	i = 0
	for ; i+8 <= len(row); i += 8 {
		x := binary.LittleEndian.Uint64(row[i:])
		if c := bits.OnesCount64(x); k >= c {
			k -= c
			continue
		}
		for j := 0; ; j, x = j+1, x>>8 {
			if x&0xff != 0 {
				if k == 0 {
					return int32(i + j)
				}
				k--
			}
		}
	}
	for j, m := range row[i:] {
		if m != 0 {
			if k == 0 {
				return int32(i + j)
			}
			k--
		}
	}
	return -1
}

func (e *vecEnv) record(k int) ([]byte, *env.Error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.usable(); err != nil {
		return nil, err
	}
	fin, cur, err := e.v.Record(k)
	if err != nil {
		return nil, env.FieldError("k", "%v", err)
	}
	b, _ := json.Marshal(map[string]any{"finished": wire.RecordOf(fin), "current": wire.RecordOf(cur)})
	return b, nil
}

// close closes the Vec and gives its memory back to the budget, once: it
// waits for a call in flight on e, and every later one answers not_found.
func (e *vecEnv) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	e.closed = true
	e.v.Close()
	release(e.cost)
}

// copyChunk is how many bytes one goroutine copies at least.
const copyChunk = 1 << 18

// parallelCopy copies src into dst (same length), split over the cores when
// it is large (the observations of a big batch are megabytes).
func parallelCopy(dst, src []byte) {
	w := min(runtime.GOMAXPROCS(0), len(src)/copyChunk)
	if w <= 1 {
		copy(dst, src)
		return
	}
	var wg sync.WaitGroup
	for k := range w {
		lo, hi := k*len(src)/w, (k+1)*len(src)/w
		wg.Add(1)
		go func() {
			defer wg.Done()
			copy(dst[lo:hi], src[lo:hi])
		}()
	}
	wg.Wait()
}

// widenChunk is how many elements one goroutine converts at least.
const widenChunk = 1 << 16

// widen writes src as float32 into dst (same length), split over the cores
// when it is large: the conversion runs without Python's GIL, in parallel.
func widen(dst []float32, src []uint8) {
	w := min(runtime.GOMAXPROCS(0), len(src)/widenChunk)
	if w <= 1 {
		widenRange(dst, src)
		return
	}
	var wg sync.WaitGroup
	for k := range w {
		lo, hi := k*len(src)/w, (k+1)*len(src)/w
		wg.Add(1)
		go func() {
			defer wg.Done()
			widenRange(dst[lo:hi], src[lo:hi])
		}()
	}
	wg.Wait()
}

// asFloat32 maps a byte to its float32 value: a table load is twice as fast
// as the conversion instruction here.
var asFloat32 = func() (t [256]float32) {
	for i := range t {
		t[i] = float32(i)
	}
	return t
}()

func widenRange(dst []float32, src []uint8) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = asFloat32[x]
	}
}
