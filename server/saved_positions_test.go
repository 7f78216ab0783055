package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// playDuel plays a learner-seat duel session through its first game and a
// few actions into the next, and returns the session id.
func playDuel(t *testing.T, c *client, seed int) string {
	t.Helper()
	s := c.create(map[string]any{"game": map[string]any{"name": "duel", "max_rounds": 60}, "num_envs": 1, "seed": seed, "learner_seats": []int{0}, "opponent": "heuristic"})
	b := c.reset(s.Session, map[string]any{})
	for after := -1; after < 3; {
		var mask []int
		for a, m := range b.Mask.Data {
			if m == 1 {
				mask = append(mask, a)
			}
		}
		b = c.step(s.Session, []int32{int32(mask[len(mask)/2])})
		if b.Done.Data[0] == 1 {
			after = 0
		} else if after >= 0 {
			after++
		}
	}
	return s.Session
}

// recordJSON is the record route's answer as a user saves it (curl > file).
func recordJSON(t *testing.T, c *client, id string) []byte {
	t.Helper()
	a := c.do("GET", "/v1/sessions/"+id+"/envs/0/record", ctJSON, nil)
	require.Equal(t, http.StatusOK, a.Status, "%s", a.Body)
	return a.Body
}

// part is one of the record answer's records, its bytes as they were.
func part(t *testing.T, answer []byte, which string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(answer, &m))
	return m[which]
}

// A saved duel record, sent back to POST /v1/positions, is described as
// its session describes it: the record route's whole answer (its finished
// game), either of its records alone, in JSON or msgpack, from any action.
func TestPositionsOfASavedRecord(t *testing.T) {
	c := newClient(t)
	id := playDuel(t, c, 11)
	saved := recordJSON(t, c, id)
	session := func(query string) positionsAnswer {
		var p positionsAnswer
		decodeAnswer(t, c.do("GET", "/v1/sessions/"+id+"/envs/0/positions?"+query, "", nil), &p)
		return p
	}
	fin, cur := session("game=finished"), session("game=current")
	require.True(t, fin.Done)
	require.False(t, cur.Done)
	require.Positive(t, cur.Actions)
	for _, tc := range []struct {
		name  string
		query string
		body  []byte
		want  positionsAnswer
	}{
		{"the record route's answer: its finished game", "", saved, fin},
		{"the finished record alone", "", part(t, saved, "finished"), fin},
		{"the game in progress alone", "", part(t, saved, "current"), cur},
		{"the answer with no finished game: its game in progress", "", []byte(`{"finished": null, "current": ` + string(part(t, saved, "current")) + `}`), cur},
		{"from action 5", "?from=5", saved, session("game=finished&from=5")},
		{"from the end", "?from=" + strconv.Itoa(fin.Actions), saved, session("game=finished&from=" + strconv.Itoa(fin.Actions))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := c.do("POST", "/v1/positions"+tc.query, ctJSON, tc.body)
			require.Equal(t, http.StatusOK, a.Status, "%s", a.Body)
			var got positionsAnswer
			decodeAnswer(t, a, &got)
			require.Equal(t, tc.want, got)
		})
	}
	t.Run("in msgpack", func(t *testing.T) {
		a := c.do("POST", "/v1/positions", ctMsgpack, recordMsgpack(t, c, id))
		require.Equal(t, http.StatusOK, a.Status, "%s", a.Body)
		require.Equal(t, ctMsgpack, a.Header.Get("Content-Type"))
		var got positionsAnswer
		decodeAnswer(t, a, &got)
		require.Equal(t, fin.Actions, got.Actions)
		require.Equal(t, fin.Steps, got.Steps)
		require.Equal(t, legalOf(fin.Positions[3]), legalOf(got.Positions[3]))
		require.Equal(t, "finished", got.Which)
	})
}

// recordMsgpack is the record route's answer in msgpack.
func recordMsgpack(t *testing.T, c *client, id string) []byte {
	t.Helper()
	req, err := http.NewRequest("GET", "http://localhost/v1/sessions/"+id+"/envs/0/record", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", ctMsgpack)
	w := httptest.NewRecorder()
	c.h.ServeHTTP(w, req)
	require.Equal(t, http.StatusOK, w.Code, "%s", w.Body)
	return w.Body.Bytes()
}

// A record that is not one, or that does not replay, is a 400 whose
// message says why; nothing panics.
func TestPositionsOfASavedRecordRefused(t *testing.T) {
	c := newClient(t)
	id := playDuel(t, c, 12)
	saved := recordJSON(t, c, id)
	var rec map[string]any
	dec := json.NewDecoder(bytes.NewReader(part(t, saved, "finished")))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&rec))
	edit := func(f func(r map[string]any)) []byte {
		r := map[string]any{}
		b, _ := json.Marshal(rec)
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		require.NoError(t, d.Decode(&r))
		f(r)
		return js(t, r)
	}
	acts := rec["actions"].([]any)
	card := c.create(map[string]any{"num_envs": 1, "learner_seats": []int{0}, "opponent": "random", "game": map[string]any{"players": 3, "deals": 1}})
	b := c.reset(card.Session, map[string]any{})
	for b.Done.Data[0] == 0 {
		a := 0
		for a < len(b.Mask.Data) && b.Mask.Data[a] == 0 {
			a++
		}
		b = c.step(card.Session, []int32{int32(a)})
	}
	cardRecord := recordJSON(t, c, card.Session)
	for _, tc := range []struct {
		name   string
		query  string
		ct     string
		body   []byte
		status int
		says   string
	}{
		{"an empty body", "", ctJSON, nil, 400, "empty"},
		{"a list", "", ctJSON, []byte(`[1, 2]`), 400, "want a game record"},
		{"broken JSON", "", ctJSON, saved[:len(saved)/2], 400, "body:"},
		{"JSON with data after it", "", ctJSON, append(append([]byte{}, saved...), '1'), 400, "data after"},
		{"msgpack that is not a map", "", ctMsgpack, mp(t, []int{1, 2}), 400, "want a map"},
		{"an answer with no game", "", ctJSON, []byte(`{"finished": null, "current": null}`), 400, "no game"},
		{"an answer with a field more", "", ctJSON, []byte(`{"finished": null, "current": {}, "deals": []}`), 400, `"deals"`},
		{"an answer whose game is not an object", "", ctJSON, []byte(`{"finished": [1]}`), 400, "want a game record"},
		{"a record with no game", "", ctJSON, edit(func(r map[string]any) { delete(r, "game") }), 400, "game is missing"},
		{"a record of an unknown game", "", ctJSON, edit(func(r map[string]any) { r["game"] = map[string]any{"name": "chess"} }), 400, "unknown game"},
		{"a game parameter out of range", "", ctJSON, edit(func(r map[string]any) { r["game"].(map[string]any)["max_rounds"] = 100000 }), 400, "max_rounds"},
		{"a game parameter that is not a number", "", ctJSON, edit(func(r map[string]any) { r["game"].(map[string]any)["max_rounds"] = "ten" }), 400, "game.max_rounds"},
		{"actions that are not a list", "", ctJSON, edit(func(r map[string]any) { r["actions"] = 3 }), 400, "actions is a number"},
		{"an action that is not an integer", "", ctJSON, edit(func(r map[string]any) { r["actions"].([]any)[2] = 1.5 }), 400, "actions[2]"},
		{"an action not legal where it is played", "", ctJSON, edit(func(r map[string]any) { r["actions"].([]any)[4] = 116 }), 400, "does not replay"},
		{"a finished game missing its last action", "", ctJSON, []byte(`{"finished": ` + string(edit(func(r map[string]any) { r["actions"] = acts[:len(acts)-1] })) + `}`), 400, "terminal"},
		{"a return changed", "", ctJSON, edit(func(r map[string]any) { r["returns"] = []any{5, -5} }), 400, "returns"},
		{"no seed", "", ctJSON, edit(func(r map[string]any) { delete(r, "seed") }), 400, "no seed"},
		{"a negative seed", "", ctJSON, edit(func(r map[string]any) { r["seed"] = -1 }), 400, "seed = -1"},
		{"a seed of another game", "", ctJSON, edit(func(r map[string]any) { r["seed"] = 1 }), 400, "does not replay"},
		{"a card game's record (not described)", "", ctJSON, cardRecord, 400, "does not describe"},
		{"from past the end", "?from=" + strconv.Itoa(len(acts)+1), ctJSON, saved, 400, "from"},
		{"from not a number", "?from=x", ctJSON, saved, 400, "from"},
		{"a body over the limit", "", ctJSON, bytes.Repeat([]byte(" "), 4<<20+1), 413, "body over"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := c.do("POST", "/v1/positions"+tc.query, tc.ct, tc.body)
			code := "bad_request"
			if tc.status == 413 {
				code = "too_large"
			}
			e := requireError(t, a, tc.status, code)
			require.Contains(t, e.Error.Message, tc.says)
		})
	}
}
