package server

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"time"

	"github.com/davidgoliath/dgenv/env"
)

// session is one client's VecEnv with the scratch its requests reuse.
// Everything below busy is touched only by the request that holds busy.
type session struct {
	id    string
	n     int
	spec  Spec
	stepL int64 // body cap of a step request, from num_envs

	// busy is held by the one request (or the sweeper, or a delete) that may
	// use the VecEnv. A request that cannot take it answers 409.
	busy     atomic.Bool
	lastUsed atomic.Int64 // unix nanoseconds, set when busy is released

	v       *env.VecEnv
	enc     *batchEncoder
	body    []byte
	actions actionsField
	stepReq stepRequest
}

func newSessionID() (string, error) {
	var b [16]byte // 128 random bits
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// registry holds the sessions and enforces the caps. Claiming a session
// (busy) happens under mu, so a request and the sweeper or a delete never
// both believe they own one.
type registry struct {
	mu       sync.Mutex
	sessions map[string]*session
	pending  int // sessions being built, counted against the caps
	envs     int // envs of live and pending sessions
}

// reserve counts a session of n envs against the caps before it is built.
func (r *registry) reserve(n int, lim LimitsConfig) *Error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.sessions)+r.pending >= lim.MaxSessions {
		return limitError(lim, "sessions", lim.MaxSessions)
	}
	if r.envs+n > lim.MaxEnvsTotal {
		e := limitError(lim, "envs in total", lim.MaxEnvsTotal)
		e.Details["envs_in_use"] = r.envs
		return e
	}
	r.pending++
	r.envs += n
	return nil
}

func limitError(lim LimitsConfig, what string, max int) *Error {
	e := Errorf(CodeLimit, "server limit reached: at most %d %s", max, what)
	e.Details = map[string]any{"limit": max}
	e.RetryAfter = int(lim.RetryAfter / time.Second)
	return e
}

// unreserve undoes reserve when building the session failed.
func (r *registry) unreserve(n int) {
	r.mu.Lock()
	r.pending--
	r.envs -= n
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

// acquire claims session id for one request.
func (r *registry) acquire(id string) (*session, *Error) {
	r.mu.Lock()
	s := r.sessions[id]
	ok := s != nil && s.busy.CompareAndSwap(false, true)
	r.mu.Unlock()
	if s == nil {
		return nil, unknownSession(id)
	}
	if !ok {
		e := Errorf(CodeBusy, "session %s: another request is in flight", id)
		return nil, e
	}
	return s, nil
}

func unknownSession(id string) *Error {
	if len(id) > 64 {
		id = id[:64] + "..."
	}
	return Errorf(CodeNotFound, "session %q: unknown (deleted, expired or never created)", id)
}

// release ends a request's claim; the session's idle clock restarts.
func (r *registry) release(s *session) {
	s.lastUsed.Store(time.Now().UnixNano())
	s.busy.Store(false)
}

// remove deletes a session the caller has claimed and returns it.
func (r *registry) remove(s *session) {
	r.mu.Lock()
	delete(r.sessions, s.id)
	r.envs -= s.n
	r.mu.Unlock()
	s.v.Close()
}

// expire removes the sessions idle for longer than ttl, skipping any with a
// request in flight, and returns them (closed).
func (r *registry) expire(now time.Time, ttl time.Duration) []*session {
	var out []*session
	r.mu.Lock()
	for id, s := range r.sessions {
		if now.UnixNano()-s.lastUsed.Load() <= int64(ttl) {
			continue
		}
		if !s.busy.CompareAndSwap(false, true) {
			continue // a request holds it: never evicted under a request
		}
		delete(r.sessions, id)
		r.envs -= s.n
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
	return len(r.sessions), r.envs
}

// logID shortens a session id for logs: an id is a capability (whoever has
// it may step the session), so logs carry only enough to tell sessions apart.
func logID(id string) string { return id[:min(8, len(id))] + "…" }
