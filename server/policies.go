package server

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/http"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/gin-gonic/gin"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/policy"
	"github.com/davidgoliath/dgenv/server/wire"
)

// Option adjusts a Server at construction.
type Option func(*Server)

// WithPolicies serves trained policies (loaded by cmd/ from policies.dir):
// each becomes the bot "policy:<name>" for sessions' opponents, and answers
// on /v1/policies/{name}/act.
func WithPolicies(ps map[string]*policy.Policy) Option {
	return func(s *Server) {
		for name, p := range ps {
			s.policies[name] = p
		}
	}
}

// WithGames serves the games of reg (cmd/ passes games.Default(), a test
// build adds its own). Without it a server serves games.Default(). Trained
// policies become bots of the card game in reg.
func WithGames(reg *env.Registry) Option {
	return func(s *Server) { s.games = reg }
}

func (s *Server) listPolicies(c *gin.Context) {
	out := responseFormat(c.Request, formatJSON)
	list := make([]wire.PolicyInfo, 0, len(s.policies))
	for name, p := range s.policies {
		list = append(list, wire.PolicyInfoOf(name, p))
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	s.respond(c, http.StatusOK, out, map[string]any{"policies": list})
}

// actRequest asks a policy for actions: observations [N, D] ("<u1" as the
// sessions send them, or "<f4"), masks [N, A] ("<u1", A the policy's
// game's actions), greedy (default)
// or sampled from the masked softmax with a seed.
type actRequest struct {
	Obs         *Tensor  `json:"obs"`
	Mask        *Tensor  `json:"mask"`
	Greedy      *bool    `json:"greedy"`
	Temperature *float64 `json:"temperature"`
	Seed        Uint     `json:"seed"`
	Logits      bool     `json:"logits"`
}

type actResponse struct {
	Policy  string  `json:"policy"`
	Actions Tensor  `json:"actions"`
	Logits  *Tensor `json:"logits,omitempty"`
}

func (s *Server) act(c *gin.Context) {
	in, out, ok := s.formats(c)
	if !ok {
		return
	}
	name := c.Param("name")
	p := s.policies[name]
	if p == nil {
		e := env.Errorf(env.CodeNotFound, "policy %q is not loaded", name)
		names := make([]string, 0, len(s.policies))
		for n := range s.policies {
			names = append(names, n)
		}
		sort.Strings(names)
		e.Details = map[string]any{"policies": names}
		s.fail(c, out, e)
		return
	}
	d, na := p.Meta().ObsSize, p.NumActions()
	rows := s.cfg.Policies.MaxActRows
	// Float observations and masks of the largest batch, with room for JSON's base64.
	limit := int64(4096 + rows*(4*d+na)*4/3)
	// The request's memory counts against limits.memory_budget while it
	// runs: first its body (read into a buffer grown by doubling, then
	// decoded into a copy), then, once the rows are known, the float
	// observations, the logits and the answer.
	held := 3 * limit
	if cl := c.Request.ContentLength; cl > 0 && cl < limit {
		held = 3 * cl
	}
	if e := s.reg.hold(held, s.cfg.Limits); e != nil {
		s.fail(c, out, e)
		return
	}
	defer func() { s.reg.hold(-held, s.cfg.Limits) }()
	var buf []byte
	body, e := readBody(c.Writer, c.Request, limit, &buf)
	if e != nil {
		s.fail(c, out, e)
		return
	}
	var req actRequest
	if e := decode(in, body, &req); e != nil {
		s.fail(c, out, e)
		return
	}
	n, obsF, mask, e := checkAct(&req, d, na, rows)
	if e != nil {
		s.fail(c, out, e)
		return
	}
	more := int64(n) * (4*int64(d) + 4*(int64(na)+1)*4) // obsF; logits and actions, and their answer
	if e := s.reg.hold(more, s.cfg.Limits); e != nil {
		s.fail(c, out, e)
		return
	}
	held += more
	greedy := req.Greedy == nil || *req.Greedy
	temp := 1.0
	if req.Temperature != nil {
		if t := *req.Temperature; !(t > 0) || math.IsInf(t, 0) {
			s.fail(c, out, env.FieldError("temperature", "temperature %v: must be > 0", t))
			return
		}
		temp = *req.Temperature
	}
	logits := make([]float32, n*na)
	actions := make([]int32, n)
	// Rows are independent: split them over the cores. Sampling draws from
	// (seed, row), so the answer does not depend on the split.
	workers := min(runtime.GOMAXPROCS(0), max(1, n/64))
	var wg sync.WaitGroup
	var failed atomic.Pointer[env.PanicError]
	var nonFinite atomic.Pointer[error]
	for w := range workers {
		lo, hi := w*n/workers, (w+1)*n/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A panic here would end the process: catch it, answer 500.
			defer func() {
				if p := recover(); p != nil {
					failed.CompareAndSwap(nil, env.Recovered(p))
				}
			}()
			if testHookAct != nil {
				testHookAct(lo, hi)
			}
			if err := p.LogitsFloat(obsF[lo*d:hi*d], hi-lo, logits[lo*na:hi*na]); err != nil {
				// Sizes are checked above: the error is policy.ErrNonFinite.
				err = fmt.Errorf("%w (request row %d..%d)", err, lo, hi-1)
				nonFinite.CompareAndSwap(nil, &err)
				return
			}
			for r := lo; r < hi; r++ {
				rng := env.NewRNG(req.Seed.V, uint64(r))
				actions[r] = int32(policy.Choose(logits[r*na:(r+1)*na], mask[r*na:(r+1)*na], greedy, temp, &rng))
			}
		}()
	}
	wg.Wait()
	if pe := failed.Load(); pe != nil {
		s.log.Error("panic evaluating a policy", "policy", name, "panic", pe.Value, "stack", string(pe.Stack))
		s.fail(c, out, env.Errorf(env.CodeInternal, "internal error evaluating policy %q (a panic, logged)", name))
		return
	}
	if err := nonFinite.Load(); err != nil {
		s.log.Error("a policy gave non-finite logits", "policy", name, "err", *err)
		s.fail(c, out, env.Errorf(env.CodeInternal, "%v", *err))
		return
	}
	resp := actResponse{Policy: name, Actions: Tensor{Dtype: dtypeI4, Shape: []int{n}, Data: leBytes(actions)}}
	if req.Logits {
		resp.Logits = &Tensor{Dtype: dtypeF4, Shape: []int{n, na}, Data: leBytes(logits)}
	}
	s.respond(c, http.StatusOK, out, resp)
}

// testHookAct, when set (by tests), runs in each act worker before its rows.
var testHookAct func(lo, hi int)

// checkAct validates an act request for a policy of d observation values
// and na actions and returns the batch size, the observations as floats
// and the masks.
func checkAct(req *actRequest, d, na, maxRows int) (int, []float32, []uint8, *env.Error) {
	if req.Obs == nil {
		return 0, nil, nil, env.FieldError("obs", "obs: required, a tensor [N, %d]", d)
	}
	if req.Mask == nil {
		return 0, nil, nil, env.FieldError("mask", "mask: required, a tensor <u1 [N, %d]", na)
	}
	o, m := req.Obs, req.Mask
	if len(o.Shape) != 2 || o.Shape[1] != d || o.Shape[0] < 1 || o.Shape[0] > maxRows {
		return 0, nil, nil, env.FieldError("obs", "obs shape %v: want [N, %d] with 1 <= N <= %d", o.Shape, d, maxRows)
	}
	n := o.Shape[0]
	if len(m.Shape) != 2 || m.Shape[0] != n || m.Shape[1] != na {
		return 0, nil, nil, env.FieldError("mask", "mask shape %v: want [%d, %d]", m.Shape, n, na)
	}
	if (m.Dtype != dtypeU1 && m.Dtype != "|u1") || len(m.Data) != n*na {
		return 0, nil, nil, env.FieldError("mask", "mask: want dtype <u1 and %d bytes, got %s and %d", n*na, m.Dtype, len(m.Data))
	}
	obsF := make([]float32, n*d)
	switch o.Dtype {
	case dtypeU1, "|u1": // numpy spells one-byte types "|u1"
		if len(o.Data) != n*d {
			return 0, nil, nil, env.FieldError("obs", "obs: %d bytes for shape [%d, %d]", len(o.Data), n, d)
		}
		for i, v := range o.Data {
			obsF[i] = float32(v)
		}
	case dtypeF4:
		if len(o.Data) != 4*n*d {
			return 0, nil, nil, env.FieldError("obs", "obs: %d bytes for <f4 shape [%d, %d]", len(o.Data), n, d)
		}
		for i := range obsF {
			v := math.Float32frombits(binary.LittleEndian.Uint32(o.Data[4*i:]))
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return 0, nil, nil, env.FieldError("obs", "obs element %d is %v", i, v)
			}
			obsF[i] = v
		}
	default:
		return 0, nil, nil, env.FieldError("obs", "obs dtype %q: want <u1 or <f4", o.Dtype)
	}
	for r := range n {
		legal := false
		for _, v := range m.Data[r*na : (r+1)*na] {
			if v > 1 {
				return 0, nil, nil, env.FieldError("mask", "mask row %d: values must be 0 or 1", r)
			}
			legal = legal || v == 1
		}
		if !legal {
			return 0, nil, nil, env.FieldError("mask", "mask row %d has no legal action", r)
		}
	}
	return n, obsF, m.Data, nil
}

// leBytes is the little-endian bytes of a numeric slice (the slice's own
// memory on little-endian machines).
func leBytes[T int32 | float32](s []T) []byte {
	var scratch []byte
	return bytesOf(s, &scratch)
}
