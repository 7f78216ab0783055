package server_test

import (
	"net/http"
	"os"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/env/policy"
	"github.com/davidgoliath/dgenv/server"
)

// explodingBot plays randomly until its calls reach after, then panics in
// whichever goroutine (a VecEnv worker) calls it.
type explodingBot struct {
	calls *atomic.Int64
	after int64
}

func (b explodingBot) Act(s env.State, rng *env.RNG) int {
	return b.ActState(s.(*card.SpielState).S, rng)
}

func (b explodingBot) ActState(s *card.State, rng *env.RNG) card.Action {
	if b.calls.Add(1) > b.after {
		panic("bot exploded")
	}
	return card.RandomBot{}.ActState(s, rng)
}

// TestPanicInAWorkerEndsTheRequestAndTheSession: a bot panicking in a
// VecEnv worker goroutine answers that step 500, deletes its session, and
// leaves the server (and other sessions) running.
func TestPanicInAWorkerEndsTheRequestAndTheSession(t *testing.T) {
	var calls atomic.Int64
	reg := games.Default()
	require.NoError(t, reg.RegisterBot(card.GameName, "test-exploding", card.Factory(explodingBot{calls: &calls, after: 20000})))
	srv := newServerOf(t, reg)
	c := &client{tb: t, h: srv.Handler()}
	other := c.create(map[string]any{"num_envs": 2, "seed": 1}).Session
	b := c.reset(other, map[string]any{"seed": 1})
	id := c.create(map[string]any{"num_envs": 512, "seed": 1, "learner_seats": []int{0}, "opponent": "test-exploding"}).Session
	bb := c.reset(id, map[string]any{"seed": 1})
	var a answer
	for range 100 {
		a = c.do("POST", "/v1/sessions/"+id+"/step", ctMsgpack, stepBody(t, legalActions(bb.Mask.Data, 512, func(i, k int) int { return 0 })))
		if a.Status != http.StatusOK {
			break
		}
		decodeAnswer(t, a, &bb)
	}
	requireError(t, a, http.StatusInternalServerError, "internal")
	requireError(t, c.do("GET", "/v1/sessions/"+id, "", nil), http.StatusNotFound, "not_found")
	n, envs := server.Counts(srv)
	require.Equal(t, 1, n)
	require.Equal(t, 2, envs, "the broken session's envs are freed")
	c.step(other, legalActions(b.Mask.Data, 2, func(i, k int) int { return 0 }))

	t.Run("a panic while creating answers 500 and leaves no session", func(t *testing.T) {
		calls.Store(1 << 40)
		requireError(t, c.do("POST", "/v1/sessions", ctMsgpack, mp(t, map[string]any{"num_envs": 512, "learner_seats": []int{0}, "opponent": "test-exploding"})), http.StatusInternalServerError, "internal")
		n, envs := server.Counts(srv)
		require.Equal(t, 1, n)
		require.Equal(t, 2, envs)
	})
}

// TestPanicInAnActWorkerAnswers500: a panic in a policy evaluation worker
// goroutine answers that act request 500; the next one is served.
func TestPanicInAnActWorkerAnswers500(t *testing.T) {
	dir, _ := policyDir(t, "parity")
	ps, err := policy.LoadFS(games.Default(), os.DirFS(dir), nil)
	require.NoError(t, err)
	srv, err := server.New(testConfig(), nil, server.WithPolicies(ps))
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	c := &client{tb: t, h: srv.Handler()}
	const n = 512 // several workers
	mask := make([]byte, n*card.NumActions)
	for r := range n {
		mask[r*card.NumActions] = 1
	}
	body := mp(t, map[string]any{
		"obs":  map[string]any{"dtype": "<u1", "shape": []int{n, 874}, "data": make([]byte, n*874)},
		"mask": map[string]any{"dtype": "<u1", "shape": []int{n, card.NumActions}, "data": mask},
	})
	server.SetActHook(func(lo, hi int) {
		if lo > 0 {
			panic("policy exploded")
		}
	})
	t.Cleanup(func() { server.SetActHook(nil) })
	requireError(t, c.do("POST", "/v1/policies/parity/act", ctMsgpack, body), http.StatusInternalServerError, "internal")
	server.SetActHook(nil)
	require.Equal(t, http.StatusOK, c.do("POST", "/v1/policies/parity/act", ctMsgpack, body).Status)
}
