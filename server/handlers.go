package server

import (
	"bytes"
	"errors"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/vmihailenco/msgpack/v5"

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
	s.log.Info("session created", "session", logID(sess.id), "game", plan.Game.Type().Name, "num_envs", sess.n, "players", sess.spec.Players)
	r := s.sessionResponse(sess)
	r.Seq = 0
	s.respond(c, http.StatusOK, out, r)
}

// sessionResponse is what a create and GET /v1/sessions/{id} answer.
func (s *Server) sessionResponse(sess *session) createResponse {
	return createResponse{Session: sess.id, Spec: sess.spec, Bots: s.games.Bots(sess.game), Seq: sess.seq.Load()}
}

// buildSession counts a session against the caps, builds it and adds it.
func (s *Server) buildSession(plan *env.Plan) (*session, *env.Error) {
	u := usage{envs: plan.Config.NumEnvs, bytes: plan.Cost.Bytes}
	if plan.Costly != "" {
		u.search = plan.Config.NumEnvs
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

// plan turns a create request into the game and the engine's config
// (env.PlanSession, the in-process library's checks too) under this
// server's caps, then checks the server's own field, request_id.
func (s *Server) plan(req *createRequest) (*env.Plan, *env.Error) {
	r := env.SessionRequest{NumEnvs: req.NumEnvs, LearnerSeats: req.LearnerSeats, Opponent: req.Opponent,
		Opponents: req.Opponents, Reward: req.Reward, Packing: req.Packing, ObsDtype: req.ObsDtype, Workers: s.cfg.Engine.Workers}
	if req.Game != nil {
		r.Game, r.Params = req.Game.Name, req.Game.Params
	}
	if req.Seed.Set {
		r.Seed = &req.Seed.V
	}
	plan, e := env.PlanSession(s.games, r, s.caps())
	if e != nil {
		return nil, e
	}
	if req.RequestID != nil && !requestIDPattern.MatchString(*req.RequestID) {
		return nil, env.FieldError("request_id", "request_id %.80q: want 1 to 64 characters of A-Z a-z 0-9 _ . -", *req.RequestID)
	}
	return plan, nil
}

// caps are this server's limits on one session, named as its config
// names them.
func (s *Server) caps() env.Caps {
	l := s.cfg.Limits
	return env.Caps{
		MaxEnvs: l.MaxEnvsPerSession, MaxEnvsName: "this server's max_envs_per_session",
		MaxSearchEnvs: l.MaxSearchEnvs, MaxSearchEnvsName: "limits.max_search_envs",
		// msgpack's bin32 carries at most 4 GiB.
		MaxBlob: math.MaxUint32, MaxBlobName: "4 GiB msgpack allows one binary",
		MemoryBudget: l.MemoryBudget, MemoryBudgetName: "the server's whole limits.memory_budget",
		DefaultOpponent: s.cfg.Sessions.DefaultOpponent, DefaultOpponentName: "sessions.default_opponent",
		Seed: wire.RandomSeed,
	}
}

func (s *Server) newSession(plan *env.Plan) (*session, *env.Error) {
	id, err := newSessionID()
	if err != nil {
		return nil, asError(err)
	}
	g, vc := plan.Game, plan.Config
	v, e := plan.New()
	if e != nil {
		var pe *env.PanicError
		if errors.As(e, &pe) {
			s.log.Error("panic creating a session", "panic", pe.Value, "stack", string(pe.Stack))
			if e := opponentFailure(pe); e != nil {
				return nil, env.Errorf(env.CodeInternal, "an opponent failed: %v: no session was made", e)
			}
			return nil, env.Errorf(env.CodeInternal, "internal error creating the session (a panic, logged); no session was made")
		}
		return nil, e
	}
	l := g.Observation()
	n, na := vc.NumEnvs, g.NumDistinctActions()
	spec := wire.NewSpec(g, v, vc, plan.ObsDtype)
	var pk *obs.Packing
	if vc.Packed {
		p := v.Packing()
		pk = &p
	}
	sess := &session{
		id: id, n: n, v: v, game: g.Type().Name,
		claim: make(chan struct{}, 1), gone: make(chan struct{}),
		enc: newBatchEncoder(n, g.NumPlayers(), l.Size, na, plan.ObsDtype, pk),
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
		s.fail(c, out, env.Errorf(env.CodeBadRequest, "actions: required (a tensor or an array of %d integers)", sess.n))
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
		s.fail(c, out, env.StepError(err))
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
		s.fail(c, out, env.Errorf(env.CodeInternal, "an opponent failed: %v: the session was deleted", e))
		return
	}
	s.fail(c, out, env.Errorf(env.CodeInternal, "internal error while stepping (a panic, logged): the session was deleted, create a new one"))
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
		e := env.Errorf(env.CodeBadRequest, "env %q: must be an integer 0..%d", c.Param("k"), sess.n-1)
		e.Details = map[string]any{"field": "k"}
		s.fail(c, out, e)
		return
	}
	fin, cur, err := sess.v.Record(k)
	if err != nil {
		s.fail(c, out, env.Errorf(env.CodeBadRequest, "%v", err))
		return
	}
	s.respond(c, http.StatusOK, out, recordResponse{Finished: toGameRecord(fin), Current: toGameRecord(cur)})
}

// positions answers GET .../envs/{k}/positions?game=current|finished&from=n:
// one of env k's game records replayed and described for people, from
// action n on (env.Record.Describe), for a game whose states describe
// themselves (env.Describer: the duel). The browser page draws from it.
func (s *Server) positions(c *gin.Context) {
	_, out, sess := s.claim(c)
	if sess == nil {
		return
	}
	k, ok := envIndex(c.Param("k"))
	if !ok || k >= sess.n {
		s.reg.release(sess)
		e := env.Errorf(env.CodeBadRequest, "env %q: must be an integer 0..%d", c.Param("k"), sess.n-1)
		e.Details = map[string]any{"field": "k"}
		s.fail(c, out, e)
		return
	}
	fin, cur, err := sess.v.Record(k)
	s.reg.release(sess) // the records are copies: the replay needs no claim
	if err != nil {
		s.fail(c, out, env.Errorf(env.CodeBadRequest, "%v", err))
		return
	}
	which := c.DefaultQuery("game", "current")
	rec := cur
	switch which {
	case "current":
	case "finished":
		rec = fin
	default:
		e := env.Errorf(env.CodeBadRequest, "game %q: want \"current\" or \"finished\"", which)
		e.Details = map[string]any{"field": "game"}
		s.fail(c, out, e)
		return
	}
	from, e := fromQuery(c)
	if e != nil {
		s.fail(c, out, e)
		return
	}
	if rec == nil {
		s.fail(c, out, env.Errorf(env.CodeNotFound, "env %d has no finished game yet", k))
		return
	}
	if e := fromWithin(from, len(rec.Actions)); e != nil {
		s.fail(c, out, e)
		return
	}
	positions, steps, err := rec.Describe(s.games, from)
	if errors.Is(err, env.ErrNotDescribed) {
		s.fail(c, out, notDescribed(err))
		return
	}
	if err != nil {
		s.fail(c, out, env.Errorf(env.CodeInternal, "replaying env %d's record: %v", k, err))
		return
	}
	s.respond(c, http.StatusOK, out, wire.PositionsOf(rec, which, from, positions, steps))
}

// fromQuery reads the positions routes' ?from=n (0 when absent).
func fromQuery(c *gin.Context) (int, *env.Error) {
	q, given := c.GetQuery("from")
	if !given {
		return 0, nil
	}
	from, ok := envIndex(q)
	if !ok {
		e := env.Errorf(env.CodeBadRequest, "from %q: must be an integer 0 or more, in decimal digits", q)
		e.Details = map[string]any{"field": "from"}
		return 0, e
	}
	return from, nil
}

// fromWithin refuses a ?from past the end of a game of n actions.
func fromWithin(from, n int) *env.Error {
	if from <= n {
		return nil
	}
	e := env.Errorf(env.CodeBadRequest, "from %d: the game has %d actions (want 0..%d)", from, n, n)
	e.Details = map[string]any{"field": "from"}
	return e
}

// notDescribed answers a record of a game whose states are not
// env.Describers (env.ErrNotDescribed).
func notDescribed(err error) *env.Error {
	return env.Errorf(env.CodeBadRequest, "%v: positions are served for games that describe them (the duel)", err)
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
		s.fail(c, out, env.Errorf(env.CodeInternal, "%v", err))
		return
	}
	s.respond(c, http.StatusOK, out, map[string]any{"games": list})
}

// maxRecordBody bounds POST /v1/positions's body: a game record, as the
// page's saved-file Watch bounds one (MAX_RECORD_BYTES in web/game.js).
const maxRecordBody = 4 << 20

// Memory POST /v1/positions holds against limits.memory_budget while it
// runs: its body decoded generically (a number becomes a 16-byte
// interface and its own value: about 16 bytes a body byte, at worst), and
// each position described and encoded: measured for a duel, 2.3 KiB of
// JSON a position, 40 KiB a position allocated in all (garbage included),
// of which the fields and the answer live to the end.
const (
	recordBodyFactor = 16
	positionBytes    = 16 << 10
)

// describeRecord answers POST /v1/positions?from=n: a game record sent back
// (a saved file: the record route's answer, whose finished game it takes,
// or its game in progress when none finished; or one record of it)
// replayed and described as GET .../envs/{k}/positions describes a
// session's. A record that does not replay (an action not legal where it
// is played, returns other than the replay's, a finished game that does
// not end) is a 400 with the reason.
func (s *Server) describeRecord(c *gin.Context) {
	in, out, ok := s.formats(c)
	if !ok {
		return
	}
	from, e := fromQuery(c)
	if e != nil {
		s.fail(c, out, e)
		return
	}
	held := int64(recordBodyFactor * maxRecordBody)
	if cl := c.Request.ContentLength; cl >= 0 && cl < maxRecordBody {
		held = recordBodyFactor * max(cl, 1024)
	}
	if e := s.reg.hold(held, s.cfg.Limits); e != nil {
		s.fail(c, out, e)
		return
	}
	defer func() { s.reg.hold(-held, s.cfg.Limits) }()
	var buf []byte
	body, e := readBody(c.Writer, c.Request, maxRecordBody, &buf)
	if e != nil {
		s.fail(c, out, e)
		return
	}
	rec, which, e := readRecord(in, body)
	if e != nil {
		s.fail(c, out, e)
		return
	}
	if e := fromWithin(from, len(rec.Actions)); e != nil {
		s.fail(c, out, e)
		return
	}
	more := int64(len(rec.Actions)-from+1) * positionBytes
	if e := s.reg.hold(more, s.cfg.Limits); e != nil {
		s.fail(c, out, e)
		return
	}
	held += more
	var positions [][]env.Field
	var steps []env.Step
	var err error
	if which == "finished" {
		rec.Terminal = true
		positions, steps, err = rec.Describe(s.games, from)
	} else {
		positions, steps, err = rec.DescribeOpenEnded(s.games, from)
	}
	var pe *env.ParamError
	switch {
	case errors.Is(err, env.ErrNotDescribed):
		s.fail(c, out, notDescribed(err))
		return
	case errors.As(err, &pe):
		e := env.Errorf(env.CodeBadRequest, "record: game: %v", err)
		e.Details = map[string]any{"field": "game"}
		s.fail(c, out, e)
		return
	case err != nil:
		s.fail(c, out, env.Errorf(env.CodeBadRequest, "the %s record does not replay: %v", rec.Game, err))
		return
	}
	if which == "" {
		which = "current"
		if rec.Terminal {
			which = "finished"
		}
	}
	s.respond(c, http.StatusOK, out, wire.PositionsOf(rec, which, from, positions, steps))
}

// readRecord decodes POST /v1/positions's body: one game record, or the
// record route's answer ({"finished", "current"}), whose finished game it
// takes (which "finished"), else its game in progress (which "current").
// which is "" for one record.
func readRecord(in format, body []byte) (*env.Record, string, *env.Error) {
	bad := func(format string, a ...any) (*env.Record, string, *env.Error) {
		return nil, "", env.Errorf(env.CodeBadRequest, format, a...)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return bad("body: empty, want a game record (as GET /v1/sessions/{id}/envs/{k}/record answers)")
	}
	var v any
	if in == formatMsgpack {
		if err := scanMsgpack(body); err != nil {
			return bad("%v", err)
		}
		dec := msgpack.GetDecoder()
		defer msgpack.PutDecoder(dec)
		dec.Reset(bytes.NewReader(body))
		var err error
		if v, err = dec.DecodeInterface(); err != nil {
			return bad("body: %v", err)
		}
	} else {
		var err error
		if v, err = wire.DecodeJSON(body); err != nil {
			return bad("body: %v", err)
		}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return bad("body: want a game record (an object with game, actions and returns, as GET /v1/sessions/{id}/envs/{k}/record answers) or that route's answer")
	}
	_, hasFinished := m["finished"]
	_, hasCurrent := m["current"]
	if hasFinished || hasCurrent {
		for k := range m {
			if k != "finished" && k != "current" {
				return bad("body: %q: the record route's answer has only \"finished\" and \"current\"", k)
			}
		}
		rec, which := m["finished"], "finished"
		if rec == nil {
			rec, which = m["current"], "current"
		}
		if rec == nil {
			return bad("body: finished and current are both null: no game to describe")
		}
		if m, ok = rec.(map[string]any); !ok {
			return bad("body: %s: want a game record (an object), got %v", which, rec)
		}
		r, err := wire.RecordFrom(m)
		if err != nil {
			return bad("record (%s): %v", which, err)
		}
		return r, which, nil
	}
	r, err := wire.RecordFrom(m)
	if err != nil {
		return bad("record: %v", err)
	}
	return r, "", nil
}
