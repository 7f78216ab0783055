package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/server"
)

// TestMemoryBudget: sessions are counted at creation at the worst case of
// their settings; past limits.memory_budget a create answers 429 (413 for a
// session larger than the whole budget) naming it, and a delete frees it.
func TestMemoryBudget(t *testing.T) {
	srv := newServer(t, func(c *server.Config) { c.Limits.MemoryBudget = 300 << 20 })
	c := &client{tb: t, h: srv.Handler()}
	// 2048 envs of 90 deals: two records of 90 deals each per env, ~132 MiB.
	big := map[string]any{"num_envs": 2048, "game": map[string]any{"players": 3, "deals": 90}}
	a := c.create(big).Session
	c.create(big)
	e := requireError(t, c.do("POST", "/v1/sessions", ctMsgpack, mp(t, big)), http.StatusTooManyRequests, "limit")
	require.Contains(t, e.Error.Message, "limits.memory_budget")
	require.Contains(t, e.Error.Message, "300 MiB")
	// Small sessions still fit.
	c.create(map[string]any{"num_envs": 16})
	huge := map[string]any{"num_envs": 8192, "game": map[string]any{"players": 3, "deals": 90}}
	e = requireError(t, c.do("POST", "/v1/sessions", ctMsgpack, mp(t, huge)), http.StatusRequestEntityTooLarge, "too_large")
	require.Contains(t, e.Error.Message, "limits.memory_budget")
	require.Equal(t, http.StatusOK, c.do("DELETE", "/v1/sessions/"+a, "", nil).Status)
	c.create(big)
	// The same envs in fewer deals, or packed, cost less.
	srv2 := newServer(t, func(c *server.Config) { c.Limits.MemoryBudget = 64 << 20 })
	c2 := &client{tb: t, h: srv2.Handler()}
	requireError(t, c2.do("POST", "/v1/sessions", ctMsgpack, mp(t, map[string]any{"num_envs": 8192, "obs_dtype": "<f4"})), http.StatusRequestEntityTooLarge, "too_large")
	c2.create(map[string]any{"num_envs": 8192, "packing": "bits"})
}

// TestSearchEnvsAreCappedAcrossSessions: limits.max_search_envs_total bounds
// the search bot's envs over all sessions.
func TestSearchEnvsAreCappedAcrossSessions(t *testing.T) {
	c := newClient(t, func(c *server.Config) { c.Limits.MaxSearchEnvs, c.Limits.MaxSearchEnvsTotal = 4, 8 })
	req := map[string]any{"num_envs": 4, "learner_seats": []int{0}, "opponent": "search", "game": map[string]any{"players": 3, "deals": 1}}
	a := c.create(req).Session
	c.create(req)
	e := requireError(t, c.do("POST", "/v1/sessions", ctMsgpack, mp(t, req)), http.StatusTooManyRequests, "limit")
	require.Contains(t, e.Error.Message, "limits.max_search_envs_total")
	c.create(map[string]any{"num_envs": 64, "learner_seats": []int{0}, "opponent": "heuristic"}) // other bots are not counted
	require.Equal(t, http.StatusOK, c.do("DELETE", "/v1/sessions/"+a, "", nil).Status)
	c.create(req)
}

// TestAnswerOverMsgpackBinLimitIsRefused: a session whose largest tensor
// would pass msgpack's 4 GiB bin32 length is refused at creation (400),
// before anything is built, never answered with a corrupt header.
func TestAnswerOverMsgpackBinLimitIsRefused(t *testing.T) {
	c := newClient(t, func(c *server.Config) {
		c.Limits.MaxEnvsPerSession = 1 << 20
		c.Limits.MaxEnvsTotal = 1 << 20
		c.Limits.MemoryBudget = 1 << 50
	})
	e := requireError(t, c.do("POST", "/v1/sessions", ctMsgpack, mp(t, map[string]any{"num_envs": 1 << 20, "obs_dtype": "<f4", "game": map[string]any{"players": 6}})), http.StatusBadRequest, "bad_request")
	require.Contains(t, e.Error.Message, "4 GiB")
}
