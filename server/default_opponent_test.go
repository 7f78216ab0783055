package server_test

import (
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/env/policy"
	"github.com/davidgoliath/dgenv/server"
)

// sessions.default_opponent plays the other seats of a session whose
// request names no opponent; an opponent the request names still wins, and
// a session without seats left to play gets none.
func TestDefaultOpponentPlaysUnnamedSeats(t *testing.T) {
	c := newClient(t, func(cfg *server.Config) { cfg.Sessions.DefaultOpponent = "heuristic" })
	game := map[string]any{"players": 4, "deals": 1}
	for _, tc := range []struct {
		name     string
		req      map[string]any
		opponent string
		seats    []any
	}{
		{"no opponent: the default", map[string]any{"learner_seats": []int{0}}, "heuristic", []any{nil, "heuristic", "heuristic", "heuristic"}},
		{"two learner seats: the default", map[string]any{"learner_seats": []int{0, 2}}, "heuristic", []any{nil, "heuristic", nil, "heuristic"}},
		{"an opponent given wins", map[string]any{"learner_seats": []int{0}, "opponent": "random"}, "random", []any{nil, "random", "random", "random"}},
		{"every seat a learner: no opponent", map[string]any{"learner_seats": []int{0, 1, 2, 3}}, "", []any{nil, nil, nil, nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req["game"] = game
			cr := c.create(tc.req)
			require.Equal(t, tc.opponent, cr.Spec.Opponent)
			require.Equal(t, tc.seats, names(cr.Spec.Opponents))
		})
	}
	t.Run("opponents given: they win, no default", func(t *testing.T) {
		cr := c.create(map[string]any{"game": game, "opponents": []any{nil, "random", "search", "random"}})
		require.Equal(t, "", cr.Spec.Opponent)
		require.Equal(t, []any{nil, "random", "search", "random"}, names(cr.Spec.Opponents))
	})
	t.Run("without the setting an opponent is required", func(t *testing.T) {
		plain := newClient(t)
		a := plain.do("POST", "/v1/sessions", ctJSON, js(t, map[string]any{"game": game, "learner_seats": []int{0}}))
		requireError(t, a, http.StatusBadRequest, "bad_request")
		require.Equal(t, "opponent", errorField(t, a))
	})
}

// The default is checked at start-up against the bots the server has: an
// unknown bot, or a policy's bot without the policy loaded, stops it with
// the key named; with the policy loaded, its guided search is the default,
// and a game the policy cannot play says the default is why.
func TestDefaultOpponentIsCheckedAtStartUp(t *testing.T) {
	for _, name := range []string{"nosuch", "policy:parity", "search:policy:parity", " heuristic"} {
		_, err := server.New(testConfig(func(cfg *server.Config) { cfg.Sessions.DefaultOpponent = name }), nil)
		require.Error(t, err, name)
		require.Contains(t, err.Error(), "sessions.default_opponent", name)
	}
	dir, _ := policyDir(t, "parity")
	ps, err := policy.LoadFS(games.Default(), os.DirFS(dir), nil)
	require.NoError(t, err)
	srv, err := server.New(testConfig(func(cfg *server.Config) { cfg.Sessions.DefaultOpponent = "search:policy:parity" }), nil, server.WithPolicies(ps))
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	c := &client{tb: t, h: srv.Handler()}
	cr := c.create(map[string]any{"game": map[string]any{"players": 4, "deals": 1}, "learner_seats": []int{0}})
	require.Equal(t, "search:policy:parity", cr.Spec.Opponent)
	a := c.do("POST", "/v1/sessions", ctJSON, js(t, map[string]any{"game": map[string]any{"players": 3}, "learner_seats": []int{0}}))
	e := requireError(t, a, http.StatusBadRequest, "bad_request")
	require.Contains(t, e.Error.Message, "sessions.default_opponent")
	require.Equal(t, "opponent", errorField(t, a))
}

// errorField is an error answer's "field".
func errorField(tb testing.TB, a answer) any {
	tb.Helper()
	var e struct {
		Error map[string]any `json:"error"`
	}
	decodeAnswer(tb, a, &e)
	return e.Error["field"]
}
