package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/env/card"
	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/env/policy"
	"github.com/davidgoliath/dgenv/server"
)

// TestMemoryBudget: sessions are counted at creation at the worst case of
// their settings; past limits.memory_budget a create answers 429 (413 for a
// session larger than the whole budget) naming it, and a delete frees it.
func TestMemoryBudget(t *testing.T) {
	srv := newServer(t, func(c *server.Config) { c.Limits.MemoryBudget = 350 << 20 })
	c := &client{tb: t, h: srv.Handler()}
	// 2048 envs of 90 deals: two records of 90 deals each per env, ~152 MiB.
	big := map[string]any{"num_envs": 2048, "game": map[string]any{"players": 3, "deals": 90}}
	a := c.create(big).Session
	c.create(big)
	e := requireError(t, c.do("POST", "/v1/sessions", ctMsgpack, mp(t, big)), http.StatusTooManyRequests, "limit")
	require.Contains(t, e.Error.Message, "limits.memory_budget")
	require.Contains(t, e.Error.Message, "350 MiB")
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

// TestJSONBatchMatchesMsgpack: the streamed JSON answer is valid JSON with
// the msgpack answer's tensors and seq, and its Content-Length is exact.
func TestJSONBatchMatchesMsgpack(t *testing.T) {
	srv := newServer(t)
	url, _ := serve(t, srv)
	c := &client{tb: t, base: url}
	for _, settings := range []map[string]any{
		{"num_envs": 5, "seed": 1},
		{"num_envs": 5, "seed": 1, "obs_dtype": "<f4", "game": map[string]any{"players": 6}},
		{"num_envs": 5, "seed": 1, "packing": "bits", "game": map[string]any{"players": 3}},
	} {
		a, b := c.create(settings).Session, c.create(settings).Session
		m := c.do("POST", "/v1/sessions/"+a+"/reset", ctMsgpack, mp(t, map[string]any{"seed": 3}))
		j := c.do("POST", "/v1/sessions/"+b+"/reset", ctJSON, []byte(`{"seed": 3}`))
		require.Equal(t, http.StatusOK, j.Status, "%s", j.Body)
		require.Equal(t, strconv.Itoa(len(j.Body)), j.Header.Get("Content-Length"))
		require.True(t, json.Valid(j.Body), "%s", j.Body)
		var fromM, fromJ map[string]any
		decodeAnswer(t, m, &fromM)
		dec := json.NewDecoder(bytes.NewReader(j.Body))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&fromJ))
		require.Equal(t, len(fromM), len(fromJ))
		for k, v := range fromM {
			if k == "seq" {
				require.Equal(t, "1", fromJ[k].(json.Number).String())
				continue
			}
			var tm, tj tensor
			decodeAnswer(t, answer{200, http.Header{"Content-Type": {ctJSON}}, js(t, v)}, &tm)
			decodeAnswer(t, answer{200, http.Header{"Content-Type": {ctJSON}}, js(t, fromJ[k])}, &tj)
			require.Equal(t, tm, tj, "tensor %s", k)
		}
	}
}

// TestActRequestsCountAgainstTheBudget: a policy act request holds its
// worst-case memory against limits.memory_budget while it runs.
func TestActRequestsCountAgainstTheBudget(t *testing.T) {
	dir, _ := policyDir(t, "parity")
	ps, err := policy.LoadFS(games.Default(), os.DirFS(dir), nil)
	require.NoError(t, err)
	srv, err := server.New(testConfig(func(c *server.Config) { c.Limits.MemoryBudget = 64 << 20 }), nil, server.WithPolicies(ps))
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	c := &client{tb: t, h: srv.Handler()}
	act := func(n int) answer {
		mask := make([]byte, n*card.NumActions)
		for r := range n {
			mask[r*card.NumActions] = 1
		}
		return c.do("POST", "/v1/policies/parity/act", ctMsgpack, mp(t, map[string]any{
			"obs":  map[string]any{"dtype": "<u1", "shape": []int{n, 874}, "data": make([]byte, n*874)},
			"mask": map[string]any{"dtype": "<u1", "shape": []int{n, card.NumActions}, "data": mask},
		}))
	}
	require.Equal(t, http.StatusOK, act(4096).Status)
	id := c.create(map[string]any{"num_envs": 768, "game": map[string]any{"players": 3, "deals": 90}}).Session
	require.Equal(t, http.StatusOK, act(64).Status, "a small request still fits")
	e := requireError(t, act(4096), http.StatusTooManyRequests, "limit")
	require.Contains(t, e.Error.Message, "limits.memory_budget")
	require.Equal(t, http.StatusOK, c.do("DELETE", "/v1/sessions/"+id, "", nil).Status)
	require.Equal(t, http.StatusOK, act(4096).Status)
	require.Contains(t, string(c.do("GET", "/metrics", "", nil).Body), "dgserver_memory_reserved_bytes 0\n", "every request gave its memory back")
}
