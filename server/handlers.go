package server

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/obs"
)

func (s *Server) healthz(c *gin.Context) {
	s.respond(c, http.StatusOK, formatOf(c.Request), map[string]string{"status": "ok"})
}

func (s *Server) readyz(c *gin.Context) {
	if s.draining.Load() {
		s.respond(c, http.StatusServiceUnavailable, formatOf(c.Request), map[string]string{"status": "draining"})
		return
	}
	s.respond(c, http.StatusOK, formatOf(c.Request), map[string]string{"status": "ready"})
}

// formats reads the request and answer formats; a bad Content-Type is a 400
// answered in JSON (or as Accept asks).
func (s *Server) formats(c *gin.Context) (in, out format, ok bool) {
	in, e := requestFormat(c.Request)
	out = responseFormat(c.Request, in)
	if e != nil {
		s.fail(c, out, e)
		return in, out, false
	}
	return in, out, true
}

func (s *Server) createSession(c *gin.Context) {
	in, out, ok := s.formats(c)
	if !ok {
		return
	}
	var buf []byte
	body, e := readBody(c.Writer, c.Request, s.cfg.Limits.MaxCreateBody, &buf)
	if e != nil {
		s.fail(c, out, e)
		return
	}
	var req createRequest
	if e := decode(in, body, &req); e != nil {
		s.fail(c, out, e)
		return
	}
	vc, obsDtype, e := s.vecConfig(&req)
	if e != nil {
		s.fail(c, out, e)
		return
	}
	var pending *createEntry
	if req.RequestID != nil {
		sess, p, e := s.reg.claimRequestID(&req, s.cfg.Limits.BusyWait, c.Request.Context().Done())
		if e != nil {
			s.fail(c, out, e)
			return
		}
		if sess != nil {
			s.m.retries.WithLabelValues("create").Inc()
			s.respond(c, http.StatusOK, out, createResponse{Session: sess.id, Spec: sess.spec, Bots: env.BotNames(), Seq: sess.seq.Load()})
			return
		}
		pending = p
	}
	sess, e := s.buildSession(vc, obsDtype)
	if pending != nil {
		s.reg.settleRequestID(*req.RequestID, pending, sess)
	}
	if e != nil {
		s.fail(c, out, e)
		return
	}
	s.log.Info("session created", "session", logID(sess.id), "num_envs", sess.n, "players", sess.spec.Players)
	s.respond(c, http.StatusOK, out, createResponse{Session: sess.id, Spec: sess.spec, Bots: env.BotNames()})
}

// buildSession counts a session against the caps, builds it and adds it.
func (s *Server) buildSession(vc env.VecConfig, obsDtype string) (*session, *Error) {
	u := usage{envs: vc.NumEnvs, bytes: costOf(vc.NumEnvs, vc.Params, obsDtype, vc.Packed).bytes}
	if vc.Opponent == "search" {
		u.search = vc.NumEnvs
	}
	if e := s.reg.reserve(u, s.cfg.Limits); e != nil {
		return nil, e
	}
	sess, e := s.newSession(vc, obsDtype)
	if e != nil {
		s.reg.unreserve(u)
		return nil, e
	}
	sess.usage = u
	s.reg.add(sess)
	return sess, nil
}

// vecConfig checks a create request and turns it into the engine's config.
func (s *Server) vecConfig(req *createRequest) (env.VecConfig, string, *Error) {
	var vc env.VecConfig
	p := env.DefaultParams()
	p.Deals = 0
	if g := req.Game; g != nil {
		if g.Players != nil {
			p.Players = *g.Players
		}
		if g.Deals != nil {
			if *g.Deals == 0 {
				return vc, "", paramError(&env.ParamError{Name: "deals", Value: 0, Reason: fmt.Sprintf("must be 1..%d", env.MaxDeals)})
			}
			p.Deals = *g.Deals
		}
		if g.FirstDealer != nil {
			p.FirstDealer = *g.FirstDealer
		}
	}
	p, err := p.Normalized()
	if err != nil {
		return vc, "", paramError(err)
	}
	n := 1
	if req.NumEnvs != nil {
		n = *req.NumEnvs
	}
	if max := s.cfg.Limits.MaxEnvsPerSession; n < 1 || n > max {
		e := Errorf(CodeBadRequest, "num_envs = %d: must be 1..%d (this server's max_envs_per_session)", n, max)
		e.Details = map[string]any{"field": "num_envs"}
		return vc, "", e
	}
	mode, err := env.ParseRewardMode(req.Reward)
	if err != nil {
		return vc, "", field("reward", err)
	}
	obsDtype := dtypeU1
	switch req.ObsDtype {
	case "", dtypeU1, "|u1":
	case dtypeF4:
		obsDtype = dtypeF4
	default:
		return vc, "", field("obs_dtype", fmt.Errorf("obs_dtype %q: want \"<u1\" or \"<f4\"", req.ObsDtype))
	}
	packed := false
	switch req.Packing {
	case "", packingNone:
	case packingBits:
		if obsDtype != dtypeU1 {
			return vc, "", field("packing", fmt.Errorf("packing %q sends obs as bits: obs_dtype must be \"<u1\", not %q", req.Packing, obsDtype))
		}
		packed = true
	default:
		return vc, "", field("packing", fmt.Errorf("packing %q: want %q or %q", req.Packing, packingNone, packingBits))
	}
	seed := req.Seed.V
	if !req.Seed.Set {
		seed = randomSeed()
	}
	for _, seat := range req.LearnerSeats {
		if seat < 0 || seat >= p.Players {
			return vc, "", field("learner_seats", fmt.Errorf("learner seat %d: must be 0..%d", seat, p.Players-1))
		}
	}
	if req.RequestID != nil && !requestIDPattern.MatchString(*req.RequestID) {
		return vc, "", field("request_id", fmt.Errorf("request_id %.80q: want 1 to 64 characters of A-Z a-z 0-9 _ . -", *req.RequestID))
	}
	if req.Opponent != "" && !slices.Contains(env.BotNames(), req.Opponent) {
		e := field("opponent", fmt.Errorf("opponent %q: unknown bot", req.Opponent))
		e.Details["bots"] = env.BotNames()
		return vc, "", e
	}
	// The search bot thinks for milliseconds a move: a large batch of it
	// would hold a step for minutes.
	if max := s.cfg.Limits.MaxSearchEnvs; req.Opponent == "search" && n > max {
		return vc, "", field("num_envs", fmt.Errorf("num_envs = %d: at most %d with the search opponent (limits.max_search_envs)", n, max))
	}
	cost := costOf(n, p, obsDtype, packed)
	if cost.maxBlob > math.MaxUint32 {
		e := Errorf(CodeBadRequest, "num_envs = %d: an answer's largest tensor would be %d bytes, over the 4 GiB msgpack allows one binary; use fewer envs, obs_dtype \"<u1\" or packing \"bits\"", n, cost.maxBlob)
		e.Details = map[string]any{"field": "num_envs"}
		return vc, "", e
	}
	if budget := s.cfg.Limits.MemoryBudget; cost.bytes > budget {
		e := Errorf(CodeTooLarge, "a session of these settings needs up to %s, more than the server's whole limits.memory_budget (%s): use fewer envs, fewer deals, obs_dtype \"<u1\" or packing \"bits\"", mib(cost.bytes), mib(budget))
		e.Details = map[string]any{"limit": budget, "bytes_needed": cost.bytes}
		return vc, "", e
	}
	return env.VecConfig{
		Params: p, NumEnvs: n, Seed: seed, LearnerSeats: req.LearnerSeats,
		Opponent: req.Opponent, Reward: mode, Workers: s.cfg.Engine.Workers, Packed: packed,
	}, obsDtype, nil
}

func field(name string, err error) *Error {
	e := Errorf(CodeBadRequest, "%v", err)
	e.Details = map[string]any{"field": name}
	return e
}

func paramError(err error) *Error {
	var pe *env.ParamError
	if errors.As(err, &pe) {
		return field("game."+pe.Name, err)
	}
	return Errorf(CodeBadRequest, "game: %v", err)
}

// randomSeed draws the seed of a session created without one (it is
// reported in the spec, so the run can be repeated).
func randomSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return binary.LittleEndian.Uint64(b[:])
}

func (s *Server) newSession(vc env.VecConfig, obsDtype string) (*session, *Error) {
	id, err := newSessionID()
	if err != nil {
		return nil, asError(err)
	}
	v, err := env.NewVecEnv(vc)
	if err != nil {
		var pe *env.PanicError
		if errors.As(err, &pe) {
			s.log.Error("panic creating a session", "panic", pe.Value, "stack", string(pe.Stack))
			return nil, Errorf(CodeInternal, "internal error creating the session (a panic, logged); no session was made")
		}
		return nil, Errorf(CodeBadRequest, "%v", err)
	}
	l := v.Layout()
	cfg := v.Config()
	n := vc.NumEnvs
	ospec := ObsSpec{Shape: []int{l.Size}, Dtype: obsDtype, Sections: l.Sections}
	packing := packingNone
	var pk *obs.Packing
	if cfg.Packed {
		p := v.Packing()
		pk, packing = &p, packingBits
		ospec.Packed = &PackedSpec{Bitorder: "little", ObsBytes: p.Bytes, Extra: p.Extra, ExtraBytes: p.ExtraBytes, MaskBytes: env.MaskBytes}
	}
	sess := &session{
		id: id, n: n, v: v,
		claim: make(chan struct{}, 1), gone: make(chan struct{}),
		enc: newBatchEncoder(n, cfg.Params.Players, l.Size, obsDtype, pk),
		// A plain JSON array of n actions with generous spacing, or a
		// tensor of int64, fits; anything bigger is not a step request.
		stepL: 4096 + 24*int64(n),
		spec: Spec{
			NumEnvs: n, Players: cfg.Params.Players, NumActions: env.NumActions,
			LearnerSeats: v.LearnerSeats(), Opponent: cfg.Opponent, Reward: cfg.Reward.String(),
			Seed: vc.Seed, Game: cfg.Params, Packing: packing, Obs: ospec,
		},
	}
	sess.actions = actionsField{dst: make([]int32, n), raw: make([]byte, 0, 8*n)}
	sess.last.actions = make([]int32, n)
	return sess, nil
}

// claim works out the request's formats and takes the session named in the
// path for this request; a nil session means it has answered already.
func (s *Server) claim(c *gin.Context) (in, out format, sess *session) {
	in, out, ok := s.formats(c)
	if !ok {
		return in, out, nil
	}
	sess, e := s.reg.acquire(c.Param("id"), s.cfg.Limits.BusyWait, c.Request.Context().Done())
	if e != nil {
		s.fail(c, out, e)
		return in, out, nil
	}
	return in, out, sess
}

func (s *Server) getSession(c *gin.Context) {
	_, out, sess := s.claim(c)
	if sess == nil {
		return
	}
	defer s.reg.release(sess)
	s.respond(c, http.StatusOK, out, createResponse{Session: sess.id, Spec: sess.spec, Bots: env.BotNames(), Seq: sess.seq.Load()})
}

func (s *Server) deleteSession(c *gin.Context) {
	_, out, sess := s.claim(c)
	if sess == nil {
		return
	}
	s.reg.remove(sess) // the claim stays held: the session is gone for good
	s.log.Info("session deleted", "session", logID(sess.id))
	s.respond(c, http.StatusOK, out, map[string]any{"session": sess.id, "deleted": true})
}

func (s *Server) reset(c *gin.Context) {
	in, out, sess := s.claim(c)
	if sess == nil {
		return
	}
	defer s.reg.release(sess)
	body, e := readBody(c.Writer, c.Request, smallBody, &sess.body)
	if e != nil {
		s.fail(c, out, e)
		return
	}
	var req resetRequest
	if e := decode(in, body, &req); e != nil {
		s.fail(c, out, e)
		return
	}
	again, e := sess.retry(req.Seq, sess.last.op == opReset && sess.last.seed == req.Seed)
	if e != nil {
		s.fail(c, out, e)
		return
	}
	if again {
		s.m.retries.WithLabelValues("reset").Inc()
		s.writeBatch(c, out, sess)
		return
	}
	if req.Seed.Set {
		sess.v.Reset(req.Seed.V)
	} else {
		sess.v.ResetContinue()
	}
	if err := sess.v.Err(); err != nil {
		s.broken(c, out, sess, err)
		return
	}
	sess.seq.Add(1)
	sess.last.op, sess.last.seed = opReset, req.Seed
	s.writeBatch(c, out, sess)
}

func (s *Server) step(c *gin.Context) {
	start := time.Now()
	in, out, sess := s.claim(c)
	if sess == nil {
		return
	}
	defer s.reg.release(sess)
	body, e := readBody(c.Writer, c.Request, sess.stepL, &sess.body)
	if e != nil {
		s.fail(c, out, e)
		return
	}
	a := &sess.actions
	a.got = false
	sess.stepReq.Actions = a
	sess.stepReq.Seq = Seq{}
	if e := decode(in, body, &sess.stepReq); e != nil {
		s.fail(c, out, e)
		return
	}
	if !a.got {
		s.fail(c, out, Errorf(CodeBadRequest, "actions: required (a tensor or an array of %d integers)", sess.n))
		return
	}
	again, e := sess.retry(sess.stepReq.Seq, sess.last.op == opStep && slices.Equal(sess.last.actions, a.dst))
	if e != nil {
		s.fail(c, out, e)
		return
	}
	if again {
		s.m.retries.WithLabelValues("step").Inc()
		s.writeBatch(c, out, sess)
		return
	}
	if err := sess.v.Step(a.dst); err != nil {
		if sess.v.Err() != nil {
			s.broken(c, out, sess, err)
			return
		}
		var ia *env.IllegalActionError
		if errors.As(err, &ia) {
			e := Errorf(CodeIllegalAction, "%v; no env was stepped", err)
			legal := ia.Legal
			if legal == nil {
				legal = []int{}
			}
			e.Details = map[string]any{"env": ia.Env, "player": ia.Player, "action": ia.Action, "legal": legal}
			s.fail(c, out, e)
			return
		}
		s.fail(c, out, Errorf(CodeBadRequest, "%v", err))
		return
	}
	sess.seq.Add(1)
	sess.last.op = opStep
	copy(sess.last.actions, a.dst)
	s.writeBatch(c, out, sess)
	s.m.steps.Add(float64(sess.n))
	s.m.stepLatency.Observe(time.Since(start).Seconds())
}

// broken ends a session whose env panicked inside a reset or step (a bot's
// bug, say): its games are half-stepped, so it is deleted, and the request
// answers 500. The server goes on.
func (s *Server) broken(c *gin.Context, out format, sess *session, err error) {
	var pe *env.PanicError
	if errors.As(err, &pe) {
		s.log.Error("panic in a session's env: session deleted", "session", logID(sess.id), "panic", pe.Value, "stack", string(pe.Stack))
	}
	s.reg.remove(sess)
	s.fail(c, out, Errorf(CodeInternal, "internal error while stepping (a panic, logged): the session was deleted, create a new one"))
}

func (s *Server) record(c *gin.Context) {
	_, out, sess := s.claim(c)
	if sess == nil {
		return
	}
	defer s.reg.release(sess)
	k, err := strconv.Atoi(c.Param("k"))
	if err != nil || k < 0 || k >= sess.n {
		e := Errorf(CodeBadRequest, "env %q: must be an integer 0..%d", c.Param("k"), sess.n-1)
		e.Details = map[string]any{"field": "k"}
		s.fail(c, out, e)
		return
	}
	fin, cur, err := sess.v.Record(k)
	if err != nil {
		s.fail(c, out, Errorf(CodeBadRequest, "%v", err))
		return
	}
	s.respond(c, http.StatusOK, out, recordResponse{Finished: toGameRecord(fin), Current: toGameRecord(cur)})
}
