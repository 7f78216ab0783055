package main

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"unsafe"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/obs"
)

// apiError is what a failed call reports: the server's error codes and
// message, so the Python side raises the same exception classes as over HTTP.
type apiError struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

func (e *apiError) Error() string { return e.Message }

func badRequest(field string, format string, args ...any) *apiError {
	e := &apiError{Code: "bad_request", Message: fmt.Sprintf(format, args...)}
	if field != "" {
		e.Details = map[string]any{"field": field}
	}
	return e
}

// vecRequest is the JSON a caller creates a batch with: the fields of the
// server's POST /v1/sessions body.
type vecRequest struct {
	Game struct {
		Players     *int `json:"players"`
		Deals       *int `json:"deals"`
		FirstDealer *int `json:"first_dealer"`
	} `json:"game"`
	NumEnvs      *int    `json:"num_envs"`
	Seed         *uint64 `json:"seed"`
	LearnerSeats []int   `json:"learner_seats"`
	Opponent     string  `json:"opponent"`
	Reward       string  `json:"reward"`
	Packing      string  `json:"packing"`
	Workers      int     `json:"workers"`
	// ObsDtype "<f4" has the observation written as float32 (what most
	// models eat), converted while it is copied out; "<u1" (default) as is.
	ObsDtype string `json:"obs_dtype"`
}

// The spec as the server reports it (server.Spec), so Python builds the
// same Spec from either transport.
type specJSON struct {
	NumEnvs      int        `json:"num_envs"`
	Players      int        `json:"players"`
	NumActions   int        `json:"num_actions"`
	LearnerSeats []int      `json:"learner_seats"`
	Opponent     string     `json:"opponent"`
	Reward       string     `json:"reward"`
	Seed         uint64     `json:"seed"`
	Game         env.Params `json:"game"`
	Packing      string     `json:"packing"`
	Obs          obsSpec    `json:"obs"`
}

type obsSpec struct {
	Shape    []int         `json:"shape"`
	Dtype    string        `json:"dtype"`
	Sections []obs.Section `json:"sections"`
	Packed   *packedSpec   `json:"packed,omitempty"`
}

type packedSpec struct {
	Bitorder   string     `json:"bitorder"`
	ObsBytes   int        `json:"obs_bytes"`
	Extra      []obs.Span `json:"extra"`
	ExtraBytes int        `json:"extra_bytes"`
	MaskBytes  int        `json:"mask_bytes"`
}

// piece is one output tensor inside the caller's arena.
type piece struct {
	Name   string `json:"name"`
	Offset int    `json:"offset"` // bytes from the arena's start, a multiple of 8
	Dtype  string `json:"dtype"`
	Shape  []int  `json:"shape"`
	src    func() []byte
	f32    bool // src's bytes are written as float32
}

// vecEnv is a batch handle: the VecEnv and where each output goes in the
// caller's arena (one buffer per reset or step, owned by the caller).
type vecEnv struct {
	mu     sync.Mutex
	v      *env.VecEnv
	spec   specJSON
	pieces []piece
	bytes  int
}

func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// newVecEnv checks a request as the server does and builds the batch.
func newVecEnv(body []byte) (*vecEnv, *apiError) {
	var req vecRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, badRequest("", "config: %v", err)
	}
	p := env.Params{Players: 4}
	if g := req.Game; g.Players != nil {
		p.Players = *g.Players
	}
	if d := req.Game.Deals; d != nil {
		if *d == 0 {
			return nil, badRequest("game.deals", "game parameter \"deals\" = 0: must be 1..%d", env.MaxDeals)
		}
		p.Deals = *d
	}
	if f := req.Game.FirstDealer; f != nil {
		p.FirstDealer = *f
	}
	p, err := p.Normalized()
	if err != nil {
		var pe *env.ParamError
		if errors.As(err, &pe) {
			return nil, badRequest("game."+pe.Name, "%v", err)
		}
		return nil, badRequest("game", "%v", err)
	}
	n := 1
	if req.NumEnvs != nil {
		n = *req.NumEnvs
	}
	if n < 1 || n > env.MaxNumEnvs {
		return nil, badRequest("num_envs", "num_envs = %d: must be 1..%d", n, env.MaxNumEnvs)
	}
	mode, err := env.ParseRewardMode(req.Reward)
	if err != nil {
		return nil, badRequest("reward", "%v", err)
	}
	packed := false
	switch req.Packing {
	case "", "none":
	case "bits":
		packed = true
	default:
		return nil, badRequest("packing", "packing %q: want \"none\" or \"bits\"", req.Packing)
	}
	for _, seat := range req.LearnerSeats {
		if seat < 0 || seat >= p.Players {
			return nil, badRequest("learner_seats", "learner seat %d: must be 0..%d", seat, p.Players-1)
		}
	}
	if req.Opponent != "" && !slices.Contains(env.BotNames(), req.Opponent) {
		e := badRequest("opponent", "opponent %q: unknown bot", req.Opponent)
		e.Details["bots"] = env.BotNames()
		return nil, e
	}
	var seed uint64
	if req.Seed != nil {
		seed = *req.Seed
	} else {
		var b [8]byte
		_, _ = rand.Read(b[:])
		seed = binary.LittleEndian.Uint64(b[:])
	}
	v, err := env.NewVecEnv(env.VecConfig{
		Params: p, NumEnvs: n, Seed: seed, LearnerSeats: req.LearnerSeats,
		Opponent: req.Opponent, Reward: mode, Workers: req.Workers, Packed: packed,
	})
	if err != nil {
		return nil, badRequest("", "%v", err)
	}
	switch req.ObsDtype {
	case "", "<u1", "|u1":
	case "<f4":
		if packed {
			v.Close()
			return nil, badRequest("obs_dtype", "packing \"bits\" sends obs as bits: obs_dtype must be \"<u1\"")
		}
	default:
		v.Close()
		return nil, badRequest("obs_dtype", "obs_dtype %q: want \"<u1\" or \"<f4\"", req.ObsDtype)
	}
	return wrapVecEnv(v, seed, req.ObsDtype == "<f4"), nil
}

func wrapVecEnv(v *env.VecEnv, seed uint64, obsF32 bool) *vecEnv {
	l := v.Layout()
	cfg := v.Config()
	n, np := v.NumEnvs(), cfg.Params.Players
	e := &vecEnv{v: v}
	e.spec = specJSON{
		NumEnvs: n, Players: np, NumActions: env.NumActions, LearnerSeats: v.LearnerSeats(),
		Opponent: cfg.Opponent, Reward: cfg.Reward.String(), Seed: seed, Game: cfg.Params,
		Packing: "none", Obs: obsSpec{Shape: []int{l.Size}, Dtype: "<u1", Sections: l.Sections},
	}
	add := func(name, dtype string, shape []int, src func() []byte) {
		pc := piece{Name: name, Offset: e.bytes, Dtype: dtype, Shape: shape, src: src, f32: dtype == "<f4" && name == "obs"}
		e.pieces = append(e.pieces, pc)
		size := len(src())
		if pc.f32 {
			size *= 4
		}
		e.bytes += (size + 7) &^ 7
	}
	if cfg.Packed {
		pk := v.Packing()
		e.spec.Packing = "bits"
		e.spec.Obs.Packed = &packedSpec{Bitorder: "little", ObsBytes: pk.Bytes, Extra: pk.Extra, ExtraBytes: pk.ExtraBytes, MaskBytes: env.MaskBytes}
		add("obs_bits", "<u1", []int{n, pk.Bytes}, func() []byte { return v.ObsBits() })
		add("obs_extra", "<u1", []int{n, pk.ExtraBytes}, func() []byte { return v.ObsExtra() })
		add("mask_bits", "<u1", []int{n, env.MaskBytes}, func() []byte { return v.MaskBits() })
	} else {
		dt := "<u1"
		if obsF32 {
			dt = "<f4"
		}
		add("obs", dt, []int{n, l.Size}, func() []byte { return v.Obs() })
		add("mask", "<u1", []int{n, env.NumActions}, func() []byte { return v.Mask() })
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
	b, _ := json.Marshal(map[string]any{"spec": e.spec, "arena": map[string]any{"bytes": e.bytes, "pieces": e.pieces}, "bots": env.BotNames()})
	return b
}

// write copies every output into the arena (len >= e.bytes).
func (e *vecEnv) write(arena []byte) {
	for i := range e.pieces {
		pc := &e.pieces[i]
		src := pc.src()
		if !pc.f32 {
			parallelCopy(arena[pc.Offset:pc.Offset+len(src)], src)
			continue
		}
		widen(unsafe.Slice((*float32)(unsafe.Pointer(&arena[pc.Offset])), len(src)), src)
	}
}

func (e *vecEnv) reset(seed uint64, hasSeed bool, arena []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if hasSeed {
		e.v.Reset(seed)
	} else {
		e.v.ResetContinue()
	}
	e.write(arena)
}

func (e *vecEnv) step(actions []int32, arena []byte) *apiError {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.v.Step(actions); err != nil {
		var ia *env.IllegalActionError
		if errors.As(err, &ia) {
			legal := ia.Legal
			if legal == nil {
				legal = []int{}
			}
			return &apiError{Code: "illegal_action", Message: fmt.Sprintf("%v; no env was stepped", err),
				Details: map[string]any{"env": ia.Env, "player": ia.Player, "action": ia.Action, "legal": legal}}
		}
		return badRequest("", "%v", err)
	}
	e.write(arena)
	return nil
}

// The server's record format (API.md, "Game records").
type gameRecord struct {
	Game   env.Params   `json:"game"`
	Deals  []dealRecord `json:"deals"`
	Totals []int        `json:"totals"`
}

type dealRecord struct {
	Dealer int      `json:"dealer"`
	Hands  [][]int  `json:"hands"`
	Plays  [][2]int `json:"plays"`
	Scores []int    `json:"scores"`
	Done   bool     `json:"done"`
}

func toGameRecord(r *env.Record) *gameRecord {
	if r == nil {
		return nil
	}
	p := r.Params.Players
	g := &gameRecord{Game: r.Params, Deals: make([]dealRecord, len(r.Deals)), Totals: r.Totals()}
	for i := range r.Deals {
		d := &r.Deals[i]
		w := dealRecord{Dealer: d.Dealer, Hands: make([][]int, p), Plays: make([][2]int, d.NumPlays), Done: d.Done}
		for s := range p {
			h := make([]int, len(d.Hands[s]))
			for j, c := range d.Hands[s] {
				h[j] = int(c)
			}
			w.Hands[s] = h
		}
		for j := range d.NumPlays {
			w.Plays[j] = [2]int{int(d.Plays[j].Seat), int(d.Plays[j].Card)}
		}
		if d.Done {
			w.Scores = append([]int(nil), d.Scores[:p]...)
		}
		g.Deals[i] = w
	}
	return g
}

func (e *vecEnv) record(k int) ([]byte, *apiError) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fin, cur, err := e.v.Record(k)
	if err != nil {
		return nil, badRequest("k", "%v", err)
	}
	b, _ := json.Marshal(map[string]any{"finished": toGameRecord(fin), "current": toGameRecord(cur)})
	return b, nil
}

func (e *vecEnv) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.v.Close()
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
