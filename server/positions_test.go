package server_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

type positionsAnswer struct {
	Game      map[string]any   `json:"game"`
	Which     string           `json:"which"`
	Actions   int              `json:"actions"`
	Done      bool             `json:"done"`
	From      int              `json:"from"`
	Positions []map[string]any `json:"positions"`
	Steps     []struct {
		Seat   int    `json:"seat"`
		Action int    `json:"action"`
		Text   string `json:"text"`
	} `json:"steps"`
}

// legalOf is a described position's legal action ids.
func legalOf(p map[string]any) []int {
	var out []int
	for _, c := range p["legal"].([]any) {
		switch a := c.(map[string]any)["action"].(type) {
		case float64:
			out = append(out, int(a))
		default: // msgpack's integers
			n, _ := strconv.Atoi(toString(a))
			out = append(out, n)
		}
	}
	return out
}

func toString(v any) string {
	switch x := v.(type) {
	case int8:
		return strconv.Itoa(int(x))
	case int16:
		return strconv.Itoa(int(x))
	case int32:
		return strconv.Itoa(int(x))
	case int64:
		return strconv.FormatInt(x, 10)
	case uint8:
		return strconv.Itoa(int(x))
	case uint16:
		return strconv.Itoa(int(x))
	case uint32:
		return strconv.Itoa(int(x))
	case uint64:
		return strconv.FormatUint(x, 10)
	}
	return "?"
}

// A duel played through a learner-seat session: after every step the
// described position's legal choices are the batch's mask, its seat to act
// the batch's player; the finished game's positions end where its record
// does, each step naming the record's action.
func TestPositionsOfADuel(t *testing.T) {
	c := newClient(t)
	s := c.create(map[string]any{"game": map[string]any{"name": "duel"}, "num_envs": 1, "seed": 5, "learner_seats": []int{1}, "opponent": "heuristic"})
	path := "/v1/sessions/" + s.Session + "/envs/0/positions"
	b := c.reset(s.Session, map[string]any{})
	// The same answer in msgpack as in JSON.
	var inJSON, inMsgpack positionsAnswer
	decodeAnswer(t, c.do("GET", path, "", nil), &inJSON)
	req := httptest.NewRequest("GET", "http://localhost"+path, nil)
	req.Header.Set("Accept", ctMsgpack)
	w := httptest.NewRecorder()
	c.h.ServeHTTP(w, req)
	require.Equal(t, http.StatusOK, w.Code, "%s", w.Body)
	decodeAnswer(t, answer{w.Code, w.Header(), w.Body.Bytes()}, &inMsgpack)
	require.Len(t, inMsgpack.Positions, len(inJSON.Positions))
	require.Equal(t, legalOf(inJSON.Positions[0]), legalOf(inMsgpack.Positions[0]))
	require.Equal(t, inJSON.Steps, inMsgpack.Steps)
	for steps := 0; ; steps++ {
		var p positionsAnswer
		decodeAnswer(t, c.do("GET", path+"?from=0", "", nil), &p)
		require.Equal(t, "current", p.Which)
		require.Len(t, p.Positions, p.Actions+1)
		require.Len(t, p.Steps, p.Actions)
		last := p.Positions[len(p.Positions)-1]
		require.Equal(t, float64(b.Player.Data[0]), last["to_act"], "seat to act")
		var mask []int
		for a, m := range b.Mask.Data {
			if m == 1 {
				mask = append(mask, a)
			}
		}
		require.Equal(t, mask, legalOf(last), "legal choices at step %d", steps)
		if steps > 0 {
			var tail positionsAnswer
			decodeAnswer(t, c.do("GET", path+"?from="+strconv.Itoa(p.Actions-1), "", nil), &tail)
			require.Len(t, tail.Positions, 2)
			require.Equal(t, p.Positions[len(p.Positions)-2], tail.Positions[0])
		}
		b = c.step(s.Session, []int32{int32(mask[len(mask)/2])})
		if b.Done.Data[0] == 1 {
			break
		}
	}
	var rec struct {
		Finished *duelRecord `json:"finished"`
	}
	decodeAnswer(t, c.do("GET", "/v1/sessions/"+s.Session+"/envs/0/record", "", nil), &rec)
	var p positionsAnswer
	decodeAnswer(t, c.do("GET", path+"?game=finished", "", nil), &p)
	require.True(t, p.Done)
	require.Equal(t, "finished", p.Which)
	require.Equal(t, len(rec.Finished.Actions), p.Actions)
	got := make([]int, len(p.Steps))
	for i, st := range p.Steps {
		got[i] = st.Action
		require.NotEmpty(t, st.Text)
	}
	require.True(t, slices.Equal(rec.Finished.Actions, got), "steps %v, record %v", got, rec.Finished.Actions)
	end := p.Positions[len(p.Positions)-1]
	require.Equal(t, true, end["over"])
	winner := -1
	if rec.Finished.Returns[0] > 0 {
		winner = 0
	} else if rec.Finished.Returns[1] > 0 {
		winner = 1
	}
	require.Equal(t, float64(winner), end["winner"])
}

func TestPositionsErrors(t *testing.T) {
	c := newClient(t)
	duel := c.create(map[string]any{"game": map[string]any{"name": "duel"}, "num_envs": 2, "learner_seats": []int{0}, "opponent": "random"})
	c.reset(duel.Session, map[string]any{})
	card := c.create(map[string]any{"num_envs": 1, "learner_seats": []int{0}, "opponent": "random"})
	c.reset(card.Session, map[string]any{})
	for _, tc := range []struct {
		path   string
		status int
		code   string
	}{
		{"/v1/sessions/" + duel.Session + "/envs/2/positions", http.StatusBadRequest, "bad_request"},
		{"/v1/sessions/" + duel.Session + "/envs/0/positions?game=last", http.StatusBadRequest, "bad_request"},
		{"/v1/sessions/" + duel.Session + "/envs/0/positions?from=-1", http.StatusBadRequest, "bad_request"},
		{"/v1/sessions/" + duel.Session + "/envs/0/positions?from=01", http.StatusBadRequest, "bad_request"},
		{"/v1/sessions/" + duel.Session + "/envs/0/positions?from=100000", http.StatusBadRequest, "bad_request"},
		{"/v1/sessions/" + duel.Session + "/envs/0/positions?game=finished", http.StatusNotFound, "not_found"},
		{"/v1/sessions/" + card.Session + "/envs/0/positions", http.StatusBadRequest, "bad_request"},
		{"/v1/sessions/0123456789abcdef0123456789abcdef/envs/0/positions", http.StatusNotFound, "not_found"},
	} {
		requireError(t, c.do("GET", tc.path, "", nil), tc.status, tc.code)
	}
}
