package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/server"
)

func names(xs []*string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		if x != nil {
			out[i] = *x
		}
	}
	return out
}

// A session of a table of different bots: "opponents" names each seat's
// bot, over JSON and msgpack, with the learner seats given or read from the
// null entries; the spec reports it, and only learner seats are to act.
func TestCreateWithPerSeatOpponents(t *testing.T) {
	c := newClient(t)
	table := []any{nil, "heuristic", "random", nil, "heuristic"}
	for _, tc := range []struct {
		name string
		req  map[string]any
	}{
		{"learner seats from the null entries", map[string]any{"opponents": table}},
		{"learner seats given", map[string]any{"opponents": table, "learner_seats": []int{3, 0}}},
		{`"" for a learner seat`, map[string]any{"opponents": []any{"", "heuristic", "random", nil, "heuristic"}}},
	} {
		for _, ct := range []string{ctJSON, ctMsgpack} {
			t.Run(tc.name+" over "+ct, func(t *testing.T) {
				tc.req["game"] = map[string]any{"players": 5, "deals": 1}
				tc.req["num_envs"] = 4
				tc.req["seed"] = 5
				body := js(t, tc.req)
				if ct == ctMsgpack {
					body = mp(t, tc.req)
				}
				a := c.do("POST", "/v1/sessions", ct, body)
				require.Equal(t, http.StatusOK, a.Status, "%s", a.Body)
				var cr created
				decodeAnswer(t, a, &cr)
				assert.Equal(t, []int{0, 3}, cr.Spec.LearnerSeats)
				assert.Equal(t, table, names(cr.Spec.Opponents))
				assert.Equal(t, "", cr.Spec.Opponent)
				b := c.reset(cr.Session, map[string]any{})
				games := 0
				for range 60 {
					for i, p := range b.Player.Data {
						require.Contains(t, []byte{0, 3}, p, "env %d: a bot seat to act", i)
					}
					b = c.step(cr.Session, legalActions(b.Mask.Data, 4, func(i, k int) int { return 0 }))
					for _, d := range b.Done.Data {
						games += int(d)
					}
				}
				require.Positive(t, games)
				var got created
				decodeAnswer(t, c.do("GET", "/v1/sessions/"+cr.Session, "", nil), &got)
				assert.Equal(t, table, names(got.Spec.Opponents))
			})
		}
	}
	t.Run("a session of one opponent reports it on every bot seat", func(t *testing.T) {
		cr := c.create(map[string]any{"learner_seats": []int{1}, "opponent": "random"})
		assert.Equal(t, "random", cr.Spec.Opponent)
		assert.Equal(t, []any{"random", nil, "random", "random"}, names(cr.Spec.Opponents))
		self := c.create(map[string]any{})
		assert.Equal(t, []any{nil, nil, nil, nil}, names(self.Spec.Opponents))
	})
}

// Each wrong "opponents" is a 400 naming the field, over both codecs.
func TestCreateRefusesWrongOpponents(t *testing.T) {
	c := newClient(t)
	for _, tc := range []struct {
		name    string
		req     map[string]any
		mention string
	}{
		{"opponent and opponents both", map[string]any{"opponent": "random", "opponents": []any{nil, "random", "random", "random"}}, "not both"},
		{"a list too short", map[string]any{"opponents": []any{nil, "random", "random"}}, "4 entries"},
		{"a list too long", map[string]any{"opponents": []any{nil, "random", "random", "random", "random"}}, "4 entries"},
		{"an empty list", map[string]any{"opponents": []any{}}, "4 entries"},
		{"a bot on a learner seat", map[string]any{"learner_seats": []int{0, 1}, "opponents": []any{nil, "random", "random", "random"}}, "seat 1 is a learner seat"},
		{"no bot on a bot seat", map[string]any{"learner_seats": []int{0}, "opponents": []any{nil, "random", nil, "random"}}, "seat 2 is not a learner seat"},
		{"a bot on every seat", map[string]any{"opponents": []any{"random", "random", "random", "random"}}, "every seat"},
		{"an unknown bot", map[string]any{"opponents": []any{nil, "random", "grandmaster", "random"}}, "seat 2: unknown bot"},
		{"a number for a bot", map[string]any{"opponents": []any{nil, 1, "random", "random"}}, "opponents"},
		{"a string for the list", map[string]any{"opponents": "random"}, "opponents"},
	} {
		for _, ct := range []string{ctJSON, ctMsgpack} {
			t.Run(tc.name+" over "+ct, func(t *testing.T) {
				body := js(t, tc.req)
				if ct == ctMsgpack {
					body = mp(t, tc.req)
				}
				a := c.do("POST", "/v1/sessions", ct, body)
				e := requireError(t, a, http.StatusBadRequest, "bad_request")
				assert.Contains(t, e.Error.Message, tc.mention)
				var d struct {
					Error struct {
						Field string `json:"field"`
					} `json:"error"`
				}
				decodeAnswer(t, a, &d)
				assert.Equal(t, "opponents", d.Error.Field, "%s", a.Body)
			})
		}
	}
}

// A seat played by search counts its session's envs against both search
// caps, as an opponent "search" does; a table without it is not counted.
func TestSearchSeatsAreCapped(t *testing.T) {
	c := newClient(t, func(c *server.Config) { c.Limits.MaxSearchEnvs, c.Limits.MaxSearchEnvsTotal = 4, 8 })
	game := map[string]any{"players": 3, "deals": 1}
	table := []any{nil, "heuristic", "search"}
	e := requireError(t, c.do("POST", "/v1/sessions", ctJSON, js(t, map[string]any{"num_envs": 5, "opponents": table, "game": game})), http.StatusBadRequest, "bad_request")
	assert.Contains(t, e.Error.Message, "limits.max_search_envs")
	assert.Contains(t, e.Error.Message, "search")
	req := map[string]any{"num_envs": 4, "opponents": table, "game": game}
	a := c.create(req).Session
	c.create(map[string]any{"num_envs": 4, "opponents": []any{nil, "search", "search"}, "game": game})
	e = requireError(t, c.do("POST", "/v1/sessions", ctMsgpack, mp(t, req)), http.StatusTooManyRequests, "limit")
	assert.Contains(t, e.Error.Message, "limits.max_search_envs_total")
	c.create(map[string]any{"num_envs": 64, "opponents": []any{nil, "heuristic", "random"}, "game": game}) // no search seat: not counted
	require.Equal(t, http.StatusOK, c.do("DELETE", "/v1/sessions/"+a, "", nil).Status)
	c.create(req)
}

// A create's request_id compares the opponents list too.
func TestRequestIDComparesOpponents(t *testing.T) {
	c := newClient(t)
	req := map[string]any{"request_id": "table-1", "opponents": []any{nil, "heuristic", "random", "random"}}
	a := c.create(req)
	require.Equal(t, a.Session, c.create(req).Session)
	other := map[string]any{"request_id": "table-1", "opponents": []any{nil, "random", "random", "random"}}
	requireError(t, c.do("POST", "/v1/sessions", ctJSON, js(t, other)), http.StatusConflict, "conflict")
}
