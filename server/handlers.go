package server

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/policy"
	"github.com/davidgoliath/dgenv/obs"
	"github.com/davidgoliath/dgenv/server/wire"
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
	plan, e := s.plan(&req)
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
			s.respond(c, http.StatusOK, out, s.sessionResponse(sess))
			return
		}
		pending = p
	}
	sess, e := s.buildSession(plan)
	if pending != nil {
		s.reg.settleRequestID(*req.RequestID, pending, sess)
	}
	if e != nil {
		s.fail(c, out, e)
		return
	}
	s.log.Info("session created", "session", logID(sess.id), "game", plan.g.Type().Name, "num_envs", sess.n, "players", sess.spec.Players)
	r := s.sessionResponse(sess)
	r.Seq = 0
	s.respond(c, http.StatusOK, out, r)
}

// sessionResponse is what a create and GET /v1/sessions/{id} answer.
func (s *Server) sessionResponse(sess *session) createResponse {
	return createResponse{Session: sess.id, Spec: sess.spec, Bots: s.games.Bots(sess.game), Seq: sess.seq.Load()}
}

// sessionPlan is a checked create request: the game and the engine's config.
type sessionPlan struct {
	g        env.Game
	vc       env.VecConfig
	obsDtype string
}

// buildSession counts a session against the caps, builds it and adds it.
func (s *Server) buildSession(plan sessionPlan) (*session, *Error) {
	vc := plan.vc
	u := usage{envs: vc.NumEnvs, bytes: costOf(vc.NumEnvs, plan.g, plan.obsDtype, vc.Packed).Bytes}
	if costlyBot(vc) != "" {
		u.search = vc.NumEnvs
	}
	if e := s.reg.reserve(u, s.cfg.Limits); e != nil {
		return nil, e
	}
	sess, e := s.newSession(plan)
	if e != nil {
		s.reg.unreserve(u)
		return nil, e
	}
	sess.usage = u
	s.reg.add(sess)
	return sess, nil
}

// plan turns a create request into the game and the engine's config. The
// engine checks what it owns (game parameters, seats, the opponent, the
// reward) and names the field; this checks the wire's own settings and the
// server's limits.
func (s *Server) plan(req *createRequest) (sessionPlan, *Error) {
	var plan sessionPlan
	var given map[string]any
	name := ""
	if req.Game != nil {
		name, given = req.Game.Name, req.Game.Params
	}
	typ, err := s.games.Lookup(name)
	if err != nil {
		e := engineError(err)
		e.Details["games"] = s.games.Names()
		return plan, e
	}
	g, err := typ.New(given)
	if err != nil {
		return plan, engineError(err)
	}
	n := 1
	if req.NumEnvs != nil {
		n = *req.NumEnvs
	}
	if max := s.cfg.Limits.MaxEnvsPerSession; n < 1 || n > max {
		e := Errorf(CodeBadRequest, "num_envs = %d: must be 1..%d (this server's max_envs_per_session)", n, max)
		e.Details = map[string]any{"field": "num_envs"}
		return plan, e
	}
	mode, err := env.ParseRewardMode(req.Reward)
	if err != nil {
		return plan, engineError(err)
	}
	obsDtype := dtypeU1
	switch req.ObsDtype {
	case "", dtypeU1, "|u1":
	case dtypeF4:
		obsDtype = dtypeF4
	default:
		return plan, field("obs_dtype", fmt.Errorf("obs_dtype %q: want \"<u1\" or \"<f4\"", req.ObsDtype))
	}
	packed := false
	switch req.Packing {
	case "", packingNone:
	case packingBits:
		if obsDtype != dtypeU1 {
			return plan, field("packing", fmt.Errorf("packing %q sends obs as bits: obs_dtype must be \"<u1\", not %q", req.Packing, obsDtype))
		}
		packed = true
	default:
		return plan, field("packing", fmt.Errorf("packing %q: want %q or %q", req.Packing, packingNone, packingBits))
	}
	seed := req.Seed.V
	if !req.Seed.Set {
		seed = randomSeed()
	}
	if req.RequestID != nil && !requestIDPattern.MatchString(*req.RequestID) {
		return plan, field("request_id", fmt.Errorf("request_id %.80q: want 1 to 64 characters of A-Z a-z 0-9 _ . -", *req.RequestID))
	}
	opponent, defaulted := req.Opponent, false
	if def := s.cfg.Sessions.DefaultOpponent; def != "" && opponent == "" && req.Opponents == nil &&
		len(req.LearnerSeats) > 0 && len(req.LearnerSeats) < g.NumPlayers() {
		opponent, defaulted = def, true
	}
	vc := env.VecConfig{NumEnvs: n, Seed: seed, LearnerSeats: req.LearnerSeats, Opponent: opponent,
		Reward: mode, Workers: s.cfg.Engine.Workers, Packed: packed}
	if req.Opponents != nil {
		if req.Opponent != "" {
			return plan, field("opponents", fmt.Errorf("opponent %q and opponents: give one bot for every other seat (opponent) or a bot per seat (opponents), not both", req.Opponent))
		}
		vc.Opponents = req.Opponents
		if vc.Bots, err = s.games.NewSeatBots(g, vc.Opponents); err != nil {
			e := engineError(err)
			e.Details["bots"] = s.games.Bots(typ.Name)
			return plan, e
		}
	}
	if opponent != "" {
		if vc.Bot, err = s.games.NewBot(g, opponent); err != nil {
			e := engineError(err)
			if defaulted {
				e.Message = fmt.Sprintf("no opponent given, and this server's default (sessions.default_opponent %q) cannot play this game: %s; name an opponent", opponent, e.Message)
			}
			e.Details["field"] = "opponent"
			e.Details["bots"] = s.games.Bots(typ.Name)
			return plan, e
		}
	}
	// The engine's own checks (seats, opponents) before the server's caps,
	// so a request wrong in both names the field.
	if _, err := vc.Check(g.NumPlayers()); err != nil {
		return plan, engineError(err)
	}
	// A costly bot (search) thinks for milliseconds a move: a large batch
	// of it would hold a step for minutes.
	if costly := costlyBot(vc); costly != "" && n > s.cfg.Limits.MaxSearchEnvs {
		return plan, field("num_envs", fmt.Errorf("num_envs = %d: at most %d with the %s opponent (limits.max_search_envs)", n, s.cfg.Limits.MaxSearchEnvs, costly))
	}
	cost := costOf(n, g, obsDtype, packed)
	if cost.MaxBlob > math.MaxUint32 {
		e := Errorf(CodeBadRequest, "num_envs = %d: an answer's largest tensor would be %d bytes, over the 4 GiB msgpack allows one binary; use fewer envs, obs_dtype \"<u1\" or packing \"bits\"", n, cost.MaxBlob)
		e.Details = map[string]any{"field": "num_envs"}
		return plan, e
	}
	if budget := s.cfg.Limits.MemoryBudget; cost.Bytes > budget {
		e := Errorf(CodeTooLarge, "a session of these settings needs up to %s, more than the server's whole limits.memory_budget (%s): use fewer envs, fewer deals, obs_dtype \"<u1\" or packing \"bits\"", mib(cost.Bytes), mib(budget))
		e.Details = map[string]any{"limit": budget, "bytes_needed": cost.Bytes}
		return plan, e
	}
	return sessionPlan{g: g, vc: vc, obsDtype: obsDtype}, nil
}

// costlyBot names a costly bot (search) that plays a seat of vc's envs, or
// is "". An env with any such seat counts once against the search caps,
// however many of its seats the bot plays (as with one opponent).
func costlyBot(vc env.VecConfig) string {
	if vc.Bot != nil && env.IsCostly(vc.Bot) {
		return vc.Opponent
	}
	for s, b := range vc.Bots {
		if b != nil && env.IsCostly(b) {
			return vc.Opponents[s]
		}
	}
	return ""
}

// engineError maps the engine's typed errors to the wire, once: a
// parameter error names "game.<param>", a config error its field, an
// unknown bot "opponent".
func engineError(err error) *Error {
	field, msg := wire.Blame(err)
	e := &Error{Code: CodeBadRequest, Message: msg, Details: map[string]any{}}
	if field != "" {
		e.Details["field"] = field
	}
	return e
}

func field(name string, err error) *Error {
	e := Errorf(CodeBadRequest, "%v", err)
	e.Details = map[string]any{"field": name}
	return e
}

// randomSeed draws the seed of a session created without one (it is
// reported in the spec, so the run can be repeated).
func randomSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return binary.LittleEndian.Uint64(b[:])
}

func (s *Server) newSession(plan sessionPlan) (*session, *Error) {
	id, err := newSessionID()
	if err != nil {
		return nil, asError(err)
	}
	g, vc := plan.g, plan.vc
	v, err := env.NewVec(g, vc)
	if err != nil {
		var pe *env.PanicError
		if errors.As(err, &pe) {
			s.log.Error("panic creating a session", "panic", pe.Value, "stack", string(pe.Stack))
			if e := opponentFailure(pe); e != nil {
				return nil, Errorf(CodeInternal, "an opponent failed: %v: no session was made", e)
			}
			return nil, Errorf(CodeInternal, "internal error creating the session (a panic, logged); no session was made")
		}
		return nil, engineError(err)
	}
	l := g.Observation()
	n, na := vc.NumEnvs, g.NumDistinctActions()
	spec := wire.NewSpec(g, v, vc, plan.obsDtype)
	var pk *obs.Packing
	if vc.Packed {
		p := v.Packing()
		pk = &p
	}
	sess := &session{
		id: id, n: n, v: v, game: g.Type().Name,
		claim: make(chan struct{}, 1), gone: make(chan struct{}),
		enc: newBatchEncoder(n, g.NumPlayers(), l.Size, na, plan.obsDtype, pk),
		// A plain JSON array of n actions with generous spacing, or a
		// tensor of int64, fits; anything bigger is not a step request.
		stepL: 4096 + 24*int64(n),
		spec:  spec,
	}
	sess.actions = actionsField{dst: make([]int32, n), raw: make([]byte, 0, 8*n), numActions: na}
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
	s.respond(c, http.StatusOK, out, s.sessionResponse(sess))
}

func (s *Server) deleteSession(c *gin.Context) {
	_, out, sess := s.claim(c)
	if sess == nil {
		return
	}
	s.reg.remove(sess) // the claim stays held: the session is gone for good
	s.reclaim.ended(sess.usage.bytes)
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
	s.reclaim.ended(sess.usage.bytes)
	if e := opponentFailure(pe); e != nil {
		s.fail(c, out, Errorf(CodeInternal, "an opponent failed: %v: the session was deleted", e))
		return
	}
	s.fail(c, out, Errorf(CodeInternal, "internal error while stepping (a panic, logged): the session was deleted, create a new one"))
}

// opponentFailure is the error of a panic that is not a bug of the server
// but an opponent's policy file unfit to play (policy.ErrNonFinite), or nil.
func opponentFailure(pe *env.PanicError) error {
	if pe == nil {
		return nil
	}
	if e, ok := pe.Value.(error); ok && errors.Is(e, policy.ErrNonFinite) {
		return e
	}
	return nil
}

func (s *Server) record(c *gin.Context) {
	_, out, sess := s.claim(c)
	if sess == nil {
		return
	}
	defer s.reg.release(sess)
	k, ok := envIndex(c.Param("k"))
	if !ok || k >= sess.n {
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

// envIndex reads an env index written the one way: decimal digits, no sign,
// no leading zero ("0", "17"; not "+1", "01", "1.0"), at most 9 of them.
func envIndex(p string) (int, bool) {
	if p == "" || len(p) > 9 || (p[0] == '0' && len(p) > 1) {
		return 0, false
	}
	k := 0
	for i := range len(p) {
		if p[i] < '0' || p[i] > '9' {
			return 0, false
		}
		k = 10*k + int(p[i]-'0')
	}
	return k, true
}

func (s *Server) listGames(c *gin.Context) {
	out := responseFormat(c.Request, formatJSON)
	list, err := wire.GamesOf(s.games)
	if err != nil {
		s.fail(c, out, Errorf(CodeInternal, "%v", err))
		return
	}
	s.respond(c, http.StatusOK, out, map[string]any{"games": list})
}
