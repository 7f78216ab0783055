package server

import (
	"crypto/rand"
	"encoding/hex"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/davidgoliath/dgenv/env"
)

// session is one client's batch (env.Vec) with the scratch its requests reuse.
// Everything below lastUsed is touched only by the request that holds the
// claim.
type session struct {
	id    string
	n     int
	spec  Spec
	stepL int64 // body cap of a step request, from num_envs
	usage usage // counted against the server-wide caps

	// claim holds a token while one request (or the sweeper, or a delete)
	// owns the session and may use the Vec. A request that finds it held
	// waits up to limits.busy_wait for it, then answers 409. A removed
	// session keeps its token for good and closes gone, so waiters see 404.
	claim    chan struct{}
	gone     chan struct{}
	lastUsed atomic.Int64 // unix nanoseconds, set when the claim is released

	// seq counts the batches the session has answered (resets and steps);
	// written under the claim, read anywhere (a create's replay).
	seq       atomic.Int64
	requestID string // the create's request_id, or ""
	removed   bool   // set by remove, under the claim

	v       env.Vec
	game    string // the game's name
	enc     *batchEncoder
	body    []byte
	actions actionsField
	stepReq stepRequest
	// last is the request that produced the current batch (seq): a retry of
	// it answers that batch again instead of stepping.
	last lastRequest
}

// The requests that produce a batch.
const (
	opNone = iota
	opReset
	opStep
)

// lastRequest is what a retry is compared with.
type lastRequest struct {
	op      int
	seed    Uint    // a reset's seed (or none)
	actions []int32 // a step's actions, len N
}

// retry decides what a reset or step carrying seq k does, given whether the
// request equals the one that produced the current batch: apply it (false),
// answer the current batch again (true), or refuse it (409 stale_seq).
func (s *session) retry(k Seq, same bool) (bool, *env.Error) {
	cur := s.seq.Load()
	if !k.Set || k.V == cur {
		return false, nil
	}
	if k.V == cur-1 && same {
		return true, nil
	}
	e := env.Errorf(env.CodeStaleSeq, "seq %d: the session's last batch is %d; only %d (the next request) or a retry of the request that produced it, with seq %d, is accepted", k.V, cur, cur, cur-1)
	e.Details = map[string]any{"seq": cur}
	return false, e
}

func newSessionID() (string, error) {
	var b [16]byte // 128 random bits
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// tryClaim takes the session's claim if it is free.
func (s *session) tryClaim() bool {
	select {
	case s.claim <- struct{}{}:
		return true
	default:
		return false
	}
}

// registry holds the sessions and enforces the caps. A session is removed
// only by whoever holds its claim, and never released after, so a request
// that gets the claim holds a live session.
type registry struct {
	mu       sync.Mutex
	sessions map[string]*session
	ids      map[string]*createEntry // request_id of a live (or pending) session
	pending  int                     // sessions being built, counted against the caps
	inUse    usage                   // of live and pending sessions
}

// usage is what a session counts against the server-wide caps.
type usage struct {
	envs   int   // num_envs
	bytes  int64 // memory at worst (costOf)
	search int   // envs played against the search bot
}

func (u *usage) add(o usage, sign int) {
	u.envs += sign * o.envs
	u.bytes += int64(sign) * o.bytes
	u.search += sign * o.search
}

// reserve counts a session against the caps before it is built.
func (r *registry) reserve(u usage, lim LimitsConfig) *env.Error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.sessions)+r.pending >= lim.MaxSessions {
		return limitError(lim, "sessions", lim.MaxSessions)
	}
	if r.inUse.envs+u.envs > lim.MaxEnvsTotal {
		e := limitError(lim, "envs in total", lim.MaxEnvsTotal)
		e.Details["envs_in_use"] = r.inUse.envs
		return e
	}
	if u.search > 0 && r.inUse.search+u.search > lim.MaxSearchEnvsTotal {
		e := env.Errorf(env.CodeLimit, "server limit reached: at most %d envs in total played against the search bot (limits.max_search_envs_total); %d in use", lim.MaxSearchEnvsTotal, r.inUse.search)
		e.Details = map[string]any{"limit": lim.MaxSearchEnvsTotal, "search_envs_in_use": r.inUse.search}
		e.RetryAfter = int(lim.RetryAfter / time.Second)
		return e
	}
	if r.inUse.bytes+u.bytes > lim.MemoryBudget {
		e := env.Errorf(env.CodeLimit, "server memory budget reached: this session needs up to %s, and %s of the %s limits.memory_budget are held by other sessions", env.MiB(u.bytes), env.MiB(r.inUse.bytes), env.MiB(lim.MemoryBudget))
		e.Details = map[string]any{"limit": lim.MemoryBudget, "bytes_needed": u.bytes, "bytes_in_use": r.inUse.bytes}
		e.RetryAfter = int(lim.RetryAfter / time.Second)
		return e
	}
	r.pending++
	r.inUse.add(u, 1)
	return nil
}

func limitError(lim LimitsConfig, what string, max int) *env.Error {
	e := env.Errorf(env.CodeLimit, "server limit reached: at most %d %s", max, what)
	e.Details = map[string]any{"limit": max}
	e.RetryAfter = int(lim.RetryAfter / time.Second)
	return e
}

// hold counts the memory of a request in flight against the budget (a
// negative n gives it back).
func (r *registry) hold(n int64, lim LimitsConfig) *env.Error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n > 0 && r.inUse.bytes+n > lim.MemoryBudget {
		e := env.Errorf(env.CodeLimit, "server memory budget reached: this request needs up to %s, and %s of the %s limits.memory_budget are held", env.MiB(n), env.MiB(r.inUse.bytes), env.MiB(lim.MemoryBudget))
		e.Details = map[string]any{"limit": lim.MemoryBudget, "bytes_needed": n, "bytes_in_use": r.inUse.bytes}
		e.RetryAfter = int(lim.RetryAfter / time.Second)
		return e
	}
	r.inUse.bytes += n
	return nil
}

// unreserve undoes reserve when building the session failed.
func (r *registry) unreserve(u usage) {
	r.mu.Lock()
	r.pending--
	r.inUse.add(u, -1)
	r.mu.Unlock()
}

// add turns a reservation into a live session.
func (r *registry) add(s *session) {
	s.lastUsed.Store(time.Now().UnixNano())
	r.mu.Lock()
	r.pending--
	r.sessions[s.id] = s
	r.mu.Unlock()
}

// acquire claims session id for one request, waiting up to wait for a
// request in flight to finish (or until done is closed: the client left).
func (r *registry) acquire(id string, wait time.Duration, done <-chan struct{}) (*session, *env.Error) {
	r.mu.Lock()
	s := r.sessions[id]
	ok := s != nil && s.tryClaim()
	r.mu.Unlock()
	if s == nil {
		return nil, unknownSession(id)
	}
	if ok {
		return s, nil
	}
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case s.claim <- struct{}{}:
			return s, nil
		case <-s.gone:
			return nil, unknownSession(id)
		case <-t.C:
		case <-done:
		}
	}
	e := env.Errorf(env.CodeBusy, "session %s: another request is in flight (waited %v)", id, wait)
	return nil, e
}

func unknownSession(id string) *env.Error {
	if len(id) > 64 {
		id = id[:64] + "..."
	}
	return env.Errorf(env.CodeNotFound, "session %q: unknown (deleted, expired or never created)", id)
}

// release ends a request's claim; the session's idle clock restarts. A
// session the request removed stays claimed.
func (r *registry) release(s *session) {
	if s.removed {
		return
	}
	s.lastUsed.Store(time.Now().UnixNano())
	<-s.claim
}

// remove deletes a session the caller has claimed (and keeps claimed).
func (r *registry) remove(s *session) {
	s.removed = true
	r.mu.Lock()
	r.drop(s)
	r.mu.Unlock()
	s.v.Close()
}

// drop unregisters a claimed session; r.mu is held.
func (r *registry) drop(s *session) {
	if s.requestID != "" {
		delete(r.ids, s.requestID)
	}
	delete(r.sessions, s.id)
	r.inUse.add(s.usage, -1)
	close(s.gone)
}

// expire removes the sessions idle for longer than ttl, skipping any with a
// request in flight, and returns them (closed).
func (r *registry) expire(now time.Time, ttl time.Duration) []*session {
	var out []*session
	r.mu.Lock()
	for _, s := range r.sessions {
		if now.UnixNano()-s.lastUsed.Load() <= int64(ttl) {
			continue
		}
		if !s.tryClaim() {
			continue // a request holds it: never evicted under a request
		}
		r.drop(s)
		out = append(out, s)
	}
	r.mu.Unlock()
	for _, s := range out {
		s.v.Close()
	}
	return out
}

// closeIdle removes every session it can claim (at shutdown).
func (r *registry) closeIdle() int {
	return len(r.expire(time.Now().Add(1<<62), 0))
}

func (r *registry) counts() (sessions, envs int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sessions), r.inUse.envs
}

// bytesInUse is the memory counted against limits.memory_budget.
func (r *registry) bytesInUse() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.inUse.bytes
}

// logID shortens a session id for logs: an id is a capability (whoever has
// it may step the session), so logs carry only enough to tell sessions apart.
func logID(id string) string { return id[:min(8, len(id))] + "…" }

// createEntry is a request_id's create: pending (sess nil, ready open) while
// the session is built, then the session until it is removed.
type createEntry struct {
	req   createRequest // the settings, request_id cleared
	sess  *session
	ready chan struct{} // closed when built or failed
}

// claimRequestID looks up a create's request_id: it returns the live session
// made by an earlier create with the same settings, or nil and a pending
// entry the caller must settle (settleRequestID) after building its session.
// A create with other settings is a conflict; one whose twin is still being
// built waits for it, up to wait.
func (r *registry) claimRequestID(req *createRequest, wait time.Duration, done <-chan struct{}) (*session, *createEntry, *env.Error) {
	id := *req.RequestID
	want := *req
	want.RequestID = nil
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		e := r.ids[id]
		if e == nil {
			e = &createEntry{req: want, ready: make(chan struct{})}
			r.ids[id] = e
			r.mu.Unlock()
			return nil, e, nil
		}
		sess := e.sess
		r.mu.Unlock()
		if !reflect.DeepEqual(e.req, want) {
			x := env.Errorf(env.CodeConflict, "request_id %q was used by another create with different settings: use a new request_id for a new session", id)
			x.Details = map[string]any{"field": "request_id"}
			return nil, nil, x
		}
		if sess != nil {
			return sess, nil, nil
		}
		select {
		case <-e.ready:
		case <-deadline.C:
			return nil, nil, env.Errorf(env.CodeBusy, "request_id %q: its session is still being created", id)
		case <-done:
			return nil, nil, env.Errorf(env.CodeBusy, "request_id %q: its session is still being created", id)
		}
	}
}

// settleRequestID ends a pending entry: sess is the new session (already
// added), or nil when creating it failed.
func (r *registry) settleRequestID(id string, e *createEntry, sess *session) {
	r.mu.Lock()
	if sess != nil {
		e.sess = sess
		sess.requestID = id
	} else {
		delete(r.ids, id)
	}
	r.mu.Unlock()
	close(e.ready)
}
