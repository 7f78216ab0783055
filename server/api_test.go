package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
	"github.com/davidgoliath/dgenv/server"
	"github.com/davidgoliath/dgenv/server/wire"
)

func TestHealthAndReadiness(t *testing.T) {
	c := newClient(t, func(c *server.Config) { c.AuthToken = "secret" })
	for _, path := range []string{"/v1/healthz", "/v1/readyz"} {
		t.Run(path+" answers 200 without a token", func(t *testing.T) {
			a := c.do("GET", path, "", nil)
			assert.Equal(t, http.StatusOK, a.Status, "%s", a.Body)
		})
	}
}

func TestCreateSessionAnswersTheSpec(t *testing.T) {
	c := newClient(t)
	for _, tc := range []struct {
		name    string
		req     map[string]any
		players int
		seats   []int
		opp     string
	}{
		{"a default session is one self-play env of 4 players", map[string]any{}, 4, []int{0, 1, 2, 3}, ""},
		{"a learner seat with a heuristic opponent", map[string]any{
			"game": map[string]any{"players": 5, "deals": 2, "first_dealer": 3}, "num_envs": 8, "seed": 42,
			"learner_seats": []int{0}, "opponent": "heuristic", "reward": "zero_sum"}, 5, []int{0}, "heuristic"},
		{"3 players", map[string]any{"game": map[string]any{"players": 3}, "num_envs": 2}, 3, []int{0, 1, 2}, ""},
		{"6 players", map[string]any{"game": map[string]any{"players": 6}}, 6, []int{0, 1, 2, 3, 4, 5}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := c.create(tc.req)
			assert.Regexp(t, regexp.MustCompile(`^[0-9a-f]{32}$`), got.Session)
			s := got.Spec
			assert.Equal(t, tc.players, s.Players)
			assert.Equal(t, tc.players, s.Game.Int("players"))
			assert.Equal(t, "david_goliath", s.Game["name"])
			assert.Equal(t, 90, s.NumActions)
			assert.Equal(t, tc.seats, s.LearnerSeats)
			assert.Equal(t, tc.opp, s.Opponent)
			assert.Equal(t, "<u1", s.Obs.Dtype)
			assert.Contains(t, got.Bots, "random")
			require.Len(t, s.Obs.Shape, 1)
			want := map[string][]int{"hand": {90}, "current_trick": {tc.players, 90}, "prize_counts": {tc.players, 5}}
			end := 0
			for _, sec := range s.Obs.Sections {
				if shape, ok := want[sec.Name]; ok {
					assert.Equal(t, shape, sec.Shape, "section %s", sec.Name)
					delete(want, sec.Name)
				}
				assert.Equal(t, end, sec.Offset, "offset of %s", sec.Name)
				n := 1
				for _, d := range sec.Shape {
					n *= d
				}
				end += n
				assert.NotEmpty(t, sec.Doc, "doc of %s", sec.Name)
			}
			assert.Empty(t, want, "required sections missing")
			assert.Equal(t, s.Obs.Shape[0], end, "sections cover the observation")
		})
	}
	t.Run("the spec comes back from GET", func(t *testing.T) {
		got := c.create(map[string]any{"num_envs": 3, "seed": 9})
		a := c.do("GET", "/v1/sessions/"+got.Session, "", nil)
		require.Equal(t, http.StatusOK, a.Status)
		var again created
		decodeAnswer(t, a, &again)
		assert.Equal(t, got.Spec, again.Spec)
		assert.Equal(t, uint64(9), again.Spec.Seed)
	})
	t.Run("JSON works as msgpack does", func(t *testing.T) {
		a := c.do("POST", "/v1/sessions", ctJSON, []byte(`{"num_envs": 2, "seed": 1, "game": {"players": 4}}`))
		require.Equal(t, http.StatusOK, a.Status, "%s", a.Body)
		assert.Equal(t, ctJSON, a.Header.Get("Content-Type"))
		var got created
		decodeAnswer(t, a, &got)
		assert.Equal(t, 2, got.Spec.NumEnvs)
		assert.Contains(t, string(a.Body), `"dtype":"<u1"`)
	})
	t.Run("Accept chooses the answer format", func(t *testing.T) {
		req := mp(t, map[string]any{"num_envs": 1})
		c2 := *c
		a := c2.doAccept("POST", "/v1/sessions", ctMsgpack, ctJSON, req)
		require.Equal(t, http.StatusOK, a.Status)
		assert.Equal(t, ctJSON, a.Header.Get("Content-Type"))
	})
	t.Run("session ids differ", func(t *testing.T) {
		seen := map[string]bool{}
		for range 20 {
			id := c.create(map[string]any{}).Session
			assert.False(t, seen[id], "id %s given twice", id)
			seen[id] = true
		}
	})
}

func (c *client) doAccept(method, path, ct, accept string, body []byte) answer {
	c.tb.Helper()
	req, _ := http.NewRequest(method, "http://localhost"+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Accept", accept)
	w := newRecorder()
	c.h.ServeHTTP(w, req)
	return answer{w.Code, w.Header(), w.Body.Bytes()}
}

func TestCreateSessionRefusesBadRequests(t *testing.T) {
	c := newClient(t, func(c *server.Config) { c.Limits.MaxEnvsPerSession = 100 })
	for _, tc := range []struct {
		name, ct string
		body     string
		mention  string
	}{
		{"an unknown field", ctJSON, `{"num_env": 4}`, "num_env"},
		{"an unknown game parameter", ctJSON, `{"game": {"player": 4}}`, "player"},
		{"players out of range", ctJSON, `{"game": {"players": 7}}`, "players"},
		{"deals of 0", ctJSON, `{"game": {"deals": 0}}`, "deals"},
		{"first_dealer out of range", ctJSON, `{"game": {"players": 3, "first_dealer": 3}}`, "first_dealer"},
		{"num_envs of 0", ctJSON, `{"num_envs": 0}`, "num_envs"},
		{"num_envs over the per-session cap", ctJSON, `{"num_envs": 101}`, "num_envs"},
		{"a negative seed", ctJSON, `{"seed": -1}`, "seed"},
		{"a fractional seed", ctJSON, `{"seed": 1.5}`, "seed"},
		{"a seed in a string", ctJSON, `{"seed": "7"}`, "seed"},
		{"a seed over 2^64-1", ctJSON, `{"seed": 18446744073709551616}`, "seed"},
		{"an unknown reward mode", ctJSON, `{"reward": "money"}`, "reward"},
		{"an unknown opponent", ctJSON, `{"learner_seats": [0], "opponent": "nobody"}`, "nobody"},
		{"learner seats without an opponent", ctJSON, `{"learner_seats": [0]}`, "opponent"},
		{"a learner seat out of range", ctJSON, `{"learner_seats": [4], "opponent": "random"}`, "learner seat"},
		{"a learner seat twice", ctJSON, `{"learner_seats": [1, 1], "opponent": "random"}`, "twice"},
		{"an unknown obs dtype", ctJSON, `{"obs_dtype": "<f8"}`, "obs_dtype"},
		{"an unknown packing", ctJSON, `{"packing": "zip"}`, "packing"},
		{"bit packing of float32 obs", ctJSON, `{"packing": "bits", "obs_dtype": "<f4"}`, "packing"},
		{"malformed JSON", ctJSON, `{"num_envs": `, "body"},
		{"a string for a number", ctJSON, `{"num_envs": "4"}`, "num_envs"},
		{"data after the JSON value", ctJSON, `{} {}`, "after"},
		{"malformed msgpack", ctMsgpack, "\x81\xa8num_envs", "truncated"},
		{"msgpack that is not a map", ctMsgpack, "\x93\x01\x02\x03", "map"},
		{"msgpack with an unknown field", ctMsgpack, string(mp(t, map[string]any{"nope": 1})), "nope"},
		{"a msgpack float for num_envs", ctMsgpack, string(mp(t, map[string]any{"num_envs": 2.0})), "num_envs"},
		{"a msgpack string for players", ctMsgpack, string(mp(t, map[string]any{"game": map[string]any{"players": "4"}})), "game.players"},
		{"an unknown msgpack game parameter", ctMsgpack, string(mp(t, map[string]any{"game": map[string]any{"player": 4}})), "game.player"},
		{"a msgpack game that is not a map", ctMsgpack, string(mp(t, map[string]any{"game": []int{4, 4, 0}})), "game"},
		{"a negative msgpack seed", ctMsgpack, string(mp(t, map[string]any{"seed": -3})), "seed"},
	} {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			a := c.do("POST", "/v1/sessions", tc.ct, []byte(tc.body))
			e := requireError(t, a, http.StatusBadRequest, "bad_request")
			assert.Contains(t, e.Error.Message, tc.mention)
		})
	}
}

func TestResetAndStep(t *testing.T) {
	c := newClient(t)
	const n = 5
	s := c.create(map[string]any{"num_envs": n, "seed": 3, "game": map[string]any{"players": 4}})
	id := s.Session
	d := s.Spec.Obs.Shape[0]

	t.Run("reset answers a batch of the right dtypes and shapes", func(t *testing.T) {
		b := c.reset(id, map[string]any{"seed": 11})
		for _, tc := range []struct {
			name  string
			t     tensor
			dtype string
			shape []int
			item  int
		}{
			{"obs", b.Obs, "<u1", []int{n, d}, 1},
			{"mask", b.Mask, "<u1", []int{n, 90}, 1},
			{"player", b.Player, "<i1", []int{n}, 1},
			{"rewards", b.Rewards, "<f4", []int{n, 4}, 4},
			{"done", b.Done, "<u1", []int{n}, 1},
			{"scores", b.Scores, "<i4", []int{n, 4}, 4},
			{"episode", b.Episode, "<i8", []int{n}, 8},
		} {
			assert.Equal(t, tc.dtype, tc.t.Dtype, "%s dtype", tc.name)
			assert.Equal(t, tc.shape, tc.t.Shape, "%s shape", tc.name)
			size := tc.item
			for _, x := range tc.shape {
				size *= x
			}
			assert.Len(t, tc.t.Data, size, "%s data bytes", tc.name)
		}
		for i := range n {
			assert.Equal(t, int8(1), int8(b.Player.Data[i]), "env %d: seat left of dealer 0 leads", i)
		}
	})
	t.Run("the same seed gives the same batch", func(t *testing.T) {
		a := c.reset(id, map[string]any{"seed": 11})
		b := c.reset(id, map[string]any{"seed": 11})
		assert.Equal(t, a, b)
		other := c.reset(id, map[string]any{"seed": 12})
		assert.NotEqual(t, a.Obs.Data, other.Obs.Data)
	})
	t.Run("a reset without a seed starts new games", func(t *testing.T) {
		a := c.reset(id, map[string]any{"seed": 11})
		b := c.reset(id, map[string]any{})
		assert.NotEqual(t, a.Obs.Data, b.Obs.Data)
		e := c.do("POST", "/v1/sessions/"+id+"/reset", ctJSON, nil)
		assert.Equal(t, http.StatusOK, e.Status, "an empty body is {}: %s", e.Body)
	})
	t.Run("every accepted form of actions steps alike", func(t *testing.T) {
		first := c.reset(id, map[string]any{"seed": 5})
		acts := legalActions(first.Mask.Data, n, func(i, k int) int { return i % k })
		want := c.step(id, acts)
		i64 := make([]byte, 8*n)
		u1 := make([]byte, n)
		plain := make([]int, n)
		for i, a := range acts {
			i64[8*i] = byte(a)
			u1[i] = byte(a)
			plain[i] = int(a)
		}
		for _, tc := range []struct {
			name, ct string
			body     []byte
		}{
			{"an <i8 tensor", ctMsgpack, mp(t, map[string]any{"actions": map[string]any{"dtype": "<i8", "shape": []int{n}, "data": i64}})},
			{"a |u1 tensor without shape", ctMsgpack, mp(t, map[string]any{"actions": map[string]any{"dtype": "|u1", "data": u1}})},
			{"a plain msgpack array", ctMsgpack, mp(t, map[string]any{"actions": plain})},
			{"a plain JSON array", ctJSON, js(t, map[string]any{"actions": plain})},
			{"a JSON tensor", ctJSON, js(t, map[string]any{"actions": map[string]any{"dtype": "<i8", "shape": []int{n}, "data": i64}})},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c.reset(id, map[string]any{"seed": 5})
				a := c.do("POST", "/v1/sessions/"+id+"/step", tc.ct, tc.body)
				require.Equal(t, http.StatusOK, a.Status, "%s", a.Body)
				var got batch
				decodeAnswer(t, a, &got)
				assert.Equal(t, want, got)
			})
		}
	})
}

func TestObsAsFloat32(t *testing.T) {
	c := newClient(t)
	u := c.create(map[string]any{"num_envs": 3, "seed": 4})
	f := c.create(map[string]any{"num_envs": 3, "seed": 4, "obs_dtype": "<f4"})
	assert.Equal(t, "<f4", f.Spec.Obs.Dtype)
	bu := c.reset(u.Session, map[string]any{"seed": 4})
	bf := c.reset(f.Session, map[string]any{"seed": 4})
	assert.Equal(t, "<f4", bf.Obs.Dtype)
	vals := le[float32](bf.Obs.Data)
	require.Len(t, vals, len(bu.Obs.Data))
	for i, x := range bu.Obs.Data {
		if float32(x) != vals[i] {
			t.Fatalf("obs[%d] = %v as <f4, want %d", i, vals[i], x)
		}
	}
}

// packedBatch is a reset/step answer of a session created with
// "packing": "bits".
type packedBatch struct {
	ObsBits  tensor  `json:"obs_bits"`
	ObsExtra tensor  `json:"obs_extra"`
	MaskBits tensor  `json:"mask_bits"`
	Obs      *tensor `json:"obs"`
	Mask     *tensor `json:"mask"`
	Player   tensor  `json:"player"`
	Rewards  tensor  `json:"rewards"`
	Done     tensor  `json:"done"`
	Scores   tensor  `json:"scores"`
	Episode  tensor  `json:"episode"`
}

// unpack follows the recipe the spec publishes: unpackbits, then the extra
// spans copied over, for obs; unpackbits for the mask.
func (b *packedBatch) unpack(tb testing.TB, ps *packedSpec, n, d int) batch {
	tb.Helper()
	require.Equal(tb, []int{n, ps.ObsBytes}, b.ObsBits.Shape)
	require.Equal(tb, []int{n, ps.ExtraBytes}, b.ObsExtra.Shape)
	require.Equal(tb, []int{n, ps.MaskBytes}, b.MaskBits.Shape)
	require.Nil(tb, b.Obs, "a packed answer has no obs")
	require.Nil(tb, b.Mask, "a packed answer has no mask")
	bits := func(data []byte, row, width, count int) []byte {
		out := make([]byte, count)
		for i := range out {
			out[i] = data[row*width+i/8] >> (i % 8) & 1
		}
		return out
	}
	var o, m []byte
	for i := range n {
		row := bits(b.ObsBits.Data, i, ps.ObsBytes, d)
		k := i * ps.ExtraBytes
		for _, sp := range ps.Extra {
			k += copy(row[sp.Offset:sp.Offset+sp.Length], b.ObsExtra.Data[k:k+sp.Length])
		}
		o = append(o, row...)
		m = append(m, bits(b.MaskBits.Data, i, ps.MaskBytes, card.NumActions)...)
	}
	return batch{
		Obs:    tensor{Dtype: "<u1", Shape: []int{n, d}, Data: o},
		Mask:   tensor{Dtype: "<u1", Shape: []int{n, card.NumActions}, Data: m},
		Player: b.Player, Rewards: b.Rewards, Done: b.Done, Scores: b.Scores, Episode: b.Episode,
	}
}

type packedSpec struct {
	Bitorder   string `json:"bitorder"`
	ObsBytes   int    `json:"obs_bytes"`
	ExtraBytes int    `json:"extra_bytes"`
	MaskBytes  int    `json:"mask_bytes"`
	Extra      []struct {
		Name   string `json:"name"`
		Offset int    `json:"offset"`
		Length int    `json:"length"`
	} `json:"extra"`
}

// TestBitPackedSessionMatchesPlain plays a packed and a plain session of the
// same seed with the same actions, in msgpack and JSON, for each player
// count: every answer, unpacked by the published recipe, is the plain one.
func TestBitPackedSessionMatchesPlain(t *testing.T) {
	c := newClient(t)
	for p := 3; p <= 6; p++ {
		const n = 5
		create := map[string]any{"game": map[string]any{"players": p, "deals": 1}, "num_envs": n, "seed": 10 + p}
		plain := c.create(create)
		create["packing"] = "bits"
		a := c.do("POST", "/v1/sessions", ctMsgpack, mp(t, create))
		require.Equal(t, http.StatusOK, a.Status, "%s", a.Body)
		var pc struct {
			Session string `json:"session"`
			Spec    struct {
				Packing string `json:"packing"`
				Obs     struct {
					Shape  []int       `json:"shape"`
					Packed *packedSpec `json:"packed"`
				} `json:"obs"`
			} `json:"spec"`
		}
		decodeAnswer(t, a, &pc)
		assert.Equal(t, "none", plain.Spec.Packing)
		require.Equal(t, "bits", pc.Spec.Packing)
		ps := pc.Spec.Obs.Packed
		require.NotNil(t, ps)
		d := pc.Spec.Obs.Shape[0]
		assert.Equal(t, "little", ps.Bitorder)
		assert.Equal(t, (d+7)/8, ps.ObsBytes)
		assert.Equal(t, 12, ps.MaskBytes)
		assert.Equal(t, 7*p+3, ps.ExtraBytes, "prize_counts [P,5] plus tricks_left, deal_index, deals_left and totals [P,2]")

		want := c.reset(plain.Session, map[string]any{"seed": 3})
		for round := range 70 {
			var got packedBatch
			path := "/v1/sessions/" + pc.Session
			format := ctMsgpack
			if round%5 == 4 {
				format = ctJSON
			}
			if round == 0 {
				decodeAnswer(t, c.do("POST", path+"/reset", format, encodeAs(t, format, map[string]any{"seed": 3})), &got)
			} else {
				acts := legalActions(want.Mask.Data, n, func(i, k int) int { return (i + round) % k })
				want = c.step(plain.Session, acts)
				a := c.do("POST", path+"/step", format, encodeAs(t, format, map[string]any{"actions": acts}))
				require.Equal(t, http.StatusOK, a.Status, "%s", a.Body)
				decodeAnswer(t, a, &got)
			}
			require.Equal(t, want, got.unpack(t, ps, n, d), "P=%d round %d (%s)", p, round, format)
		}
	}
}

func encodeAs(tb testing.TB, format string, v any) []byte {
	if format == ctMsgpack {
		return mp(tb, v)
	}
	b, err := json.Marshal(v)
	require.NoError(tb, err)
	return b
}

func TestStepRefusals(t *testing.T) {
	c := newClient(t)
	const n = 4
	// Two sessions with the same seed: one is sent bad requests between
	// its steps, the other only the good ones; both must end up alike.
	ref := c.create(map[string]any{"num_envs": n, "seed": 77})
	sut := c.create(map[string]any{"num_envs": n, "seed": 77})
	path := "/v1/sessions/" + sut.Session + "/step"
	c.reset(ref.Session, map[string]any{"seed": 77})
	cur := c.reset(sut.Session, map[string]any{"seed": 77})
	for round := range 30 {
		mask := cur.Mask.Data
		good := legalActions(mask, n, func(i, k int) int { return (i + round) % k })
		bad := append([]int32(nil), good...)
		bad[2] = illegalAction(mask, 2)
		plain := make([]int, n)
		for i := range plain {
			plain[i] = int(good[i])
		}
		for _, tc := range []struct {
			name, ct string
			body     []byte
			status   int
			code     string
		}{
			{"too few actions", ctMsgpack, stepBody(t, good[:n-1]), 400, "bad_request"},
			{"too many actions", ctMsgpack, stepBody(t, append(good, 0)), 400, "bad_request"},
			{"too few plain actions", ctJSON, js(t, map[string]any{"actions": plain[:1]}), 400, "bad_request"},
			{"an action over 89", ctJSON, js(t, map[string]any{"actions": []int{0, 90, 0, 0}}), 400, "bad_request"},
			{"a negative action", ctMsgpack, mp(t, map[string]any{"actions": []int{-2, 0, 0, 0}}), 400, "bad_request"},
			{"a fractional action", ctJSON, []byte(`{"actions": [1.5, 0, 0, 0]}`), 400, "bad_request"},
			{"a msgpack float action", ctMsgpack, mp(t, map[string]any{"actions": []float64{1, 0, 0, 0}}), 400, "bad_request"},
			{"a string action", ctMsgpack, mp(t, map[string]any{"actions": []any{"1", 0, 0, 0}}), 400, "bad_request"},
			{"no actions", ctMsgpack, mp(t, map[string]any{}), 400, "bad_request"},
			{"null actions", ctJSON, []byte(`{"actions": null}`), 400, "bad_request"},
			{"an unknown field", ctMsgpack, mp(t, map[string]any{"actions": plain, "extra": 1}), 400, "bad_request"},
			{"an unknown tensor field", ctMsgpack, mp(t, map[string]any{"actions": map[string]any{"dtype": "<i4", "data": []byte{}, "order": "C"}}), 400, "bad_request"},
			{"a float tensor", ctMsgpack, mp(t, map[string]any{"actions": map[string]any{"dtype": "<f4", "shape": []int{n}, "data": make([]byte, 4*n)}}), 400, "bad_request"},
			{"a float -1.0 (JSON)", ctJSON, []byte(`{"actions": [-1.0, 0, 0, 0]}`), 400, "bad_request"},
			{"a float -1.0 (msgpack)", ctMsgpack, mp(t, map[string]any{"actions": []any{-1.0, 0, 0, 0}}), 400, "bad_request"},
			{"a [2, 2] array for 4 envs (JSON)", ctJSON, js(t, map[string]any{"actions": [][]int{plain[:2], plain[2:]}}), 400, "bad_request"},
			{"a [2, 2] array for 4 envs (msgpack)", ctMsgpack, mp(t, map[string]any{"actions": [][]int{plain[:2], plain[2:]}}), 400, "bad_request"},
			{"a [2, 2] tensor for 4 envs", ctMsgpack, mp(t, map[string]any{"actions": map[string]any{"dtype": "<i4", "shape": []int{2, 2}, "data": make([]byte, 4*n)}}), 400, "bad_request"},
			{"a [2, 2] JSON tensor for 4 envs", ctJSON, js(t, map[string]any{"actions": map[string]any{"dtype": "<i4", "shape": []int{2, 2}, "data": make([]byte, 4*n)}}), 400, "bad_request"},
			{"a tensor of the wrong shape", ctMsgpack, mp(t, map[string]any{"actions": map[string]any{"dtype": "<i4", "shape": []int{n, 1}, "data": make([]byte, 4*n)}}), 400, "bad_request"},
			{"a tensor blob of the wrong size", ctMsgpack, mp(t, map[string]any{"actions": map[string]any{"dtype": "<i4", "shape": []int{n}, "data": make([]byte, 4*n+1)}}), 400, "bad_request"},
			{"a tensor without dtype", ctMsgpack, mp(t, map[string]any{"actions": map[string]any{"data": make([]byte, 4*n)}}), 400, "bad_request"},
			{"trailing bytes", ctMsgpack, append(stepBody(t, good), 0), 400, "bad_request"},
			{"malformed JSON", ctJSON, []byte(`{"actions": [1, 2`), 400, "bad_request"},
			{"an illegal action", ctMsgpack, stepBody(t, bad), 422, "illegal_action"},
		} {
			a := c.do("POST", path, tc.ct, tc.body)
			e := requireError(t, a, tc.status, tc.code)
			if tc.code == "illegal_action" {
				require.NotNil(t, e.Error.Env)
				require.NotNil(t, e.Error.Action)
				assert.Equal(t, 2, *e.Error.Env, "illegal_action names the env")
				assert.Equal(t, int(bad[2]), *e.Error.Action, "illegal_action names the action")
				var legal []int
				for a := range card.NumActions {
					if mask[2*card.NumActions+a] == 1 {
						legal = append(legal, a)
					}
				}
				assert.Equal(t, legal, e.Error.Legal, "illegal_action lists the legal actions")
			}
		}
		cur = c.step(sut.Session, good)
		refB := c.step(ref.Session, good)
		require.Equal(t, refB, cur, "round %d: refused requests changed the session", round)
	}
}

// TestStepSkip: an action of -1 (env.Skip) leaves its env as it is, in
// every encoding of the actions; the other envs step.
func TestStepSkip(t *testing.T) {
	c := newClient(t)
	const n = 3
	s := c.create(map[string]any{"num_envs": n, "seed": 5})
	cur := c.reset(s.Session, map[string]any{"seed": 5})
	d := len(cur.Obs.Data) / n
	for round, ct := range []string{ctMsgpack, ctJSON} {
		actions := legalActions(cur.Mask.Data, n, func(i, k int) int { return 0 })
		actions[1] = env.Skip
		var body []byte
		if ct == ctJSON {
			body = js(t, map[string]any{"actions": []int{int(actions[0]), -1, int(actions[2])}})
		} else {
			body = stepBody(t, actions)
		}
		a := c.do("POST", "/v1/sessions/"+s.Session+"/step", ct, body)
		require.Equal(t, http.StatusOK, a.Status, "round %d: %s", round, a.Body)
		var next batch
		decodeAnswer(t, a, &next)
		assert.Equal(t, cur.Obs.Data[d:2*d], next.Obs.Data[d:2*d], "round %d: skipped env's obs changed", round)
		assert.Equal(t, cur.Mask.Data[card.NumActions:2*card.NumActions], next.Mask.Data[card.NumActions:2*card.NumActions], "round %d: skipped env's mask changed", round)
		assert.NotEqual(t, cur.Obs.Data[:d], next.Obs.Data[:d], "round %d: env 0 did not step", round)
		cur = next
	}
}

func TestUnknownSessionIs404(t *testing.T) {
	c := newClient(t)
	s := c.create(map[string]any{})
	a := c.do("DELETE", "/v1/sessions/"+s.Session, "", nil)
	require.Equal(t, http.StatusOK, a.Status)
	for _, id := range []string{s.Session, "nope", strings.Repeat("f", 32), strings.Repeat("x", 500)} {
		for _, r := range []struct{ method, path string }{
			{"GET", "/v1/sessions/" + id},
			{"DELETE", "/v1/sessions/" + id},
			{"POST", "/v1/sessions/" + id + "/reset"},
			{"POST", "/v1/sessions/" + id + "/step"},
			{"GET", "/v1/sessions/" + id + "/envs/0/record"},
		} {
			t.Run(r.method+" "+r.path[:min(len(r.path), 60)], func(t *testing.T) {
				requireError(t, c.do(r.method, r.path, ctJSON, []byte(`{}`)), http.StatusNotFound, "not_found")
			})
		}
	}
	t.Run("an unknown route", func(t *testing.T) {
		requireError(t, c.do("GET", "/v2/anything", "", nil), http.StatusNotFound, "not_found")
	})
	t.Run("there is no route listing sessions", func(t *testing.T) {
		a := c.do("GET", "/v1/sessions", "", nil)
		requireError(t, a, http.StatusMethodNotAllowed, "method_not_allowed")
		assert.Equal(t, "POST", a.Header.Get("Allow"))
	})
}

func TestRecordRoute(t *testing.T) {
	c := newClient(t)
	s := c.create(map[string]any{"num_envs": 2, "seed": 1, "game": map[string]any{"players": 3, "deals": 1}})
	for _, k := range []string{"-1", "2", "x", "99999999999999999999", "+1", "%2B1", "01", "00", "1.0", "1e0", "0x1", "%201", "1%20", "%D9%A1"} {
		t.Run("env "+k+" is refused", func(t *testing.T) {
			requireError(t, c.do("GET", "/v1/sessions/"+s.Session+"/envs/"+k+"/record", "", nil), http.StatusBadRequest, "bad_request")
		})
	}
	t.Run("a fresh game has no finished record and an unfinished current one", func(t *testing.T) {
		r := c.record(s.Session, 1)
		assert.Nil(t, r.Finished)
		require.NotNil(t, r.Current)
		require.Len(t, r.Current.Deals, 1)
		d := r.Current.Deals[0]
		assert.Len(t, d.Hands, 3)
		for _, h := range d.Hands {
			assert.Len(t, h, 15)
		}
		assert.Empty(t, d.Plays)
		assert.Nil(t, d.Scores, "an unfinished deal shows scores null")
		assert.False(t, d.Done)
		assert.Equal(t, []int{0, 0, 0}, r.Current.Totals)
	})
}

type gameRecord struct {
	Game  wire.GameSpec `json:"game"`
	Deals []struct {
		Dealer int      `json:"dealer"`
		Hands  [][]int  `json:"hands"`
		Plays  [][2]int `json:"plays"`
		Scores []int    `json:"scores"`
		Done   bool     `json:"done"`
	} `json:"deals"`
	Totals []int `json:"totals"`
}

type records struct {
	Finished *gameRecord `json:"finished"`
	Current  *gameRecord `json:"current"`
}

func (c *client) record(id string, k int) records {
	c.tb.Helper()
	a := c.do("GET", "/v1/sessions/"+id+"/envs/"+itoa(k)+"/record", "", nil)
	require.Equal(c.tb, http.StatusOK, a.Status, "%s", a.Body)
	var r records
	decodeAnswer(c.tb, a, &r)
	return r
}

// TestBigEndianPathWritesTheSameBytes forces the path a big-endian machine
// takes (buffers converted element by element) and requires the answer the
// zero-copy path gives.
func TestBigEndianPathWritesTheSameBytes(t *testing.T) {
	c := newClient(t)
	s := c.create(map[string]any{"num_envs": 3, "seed": 6, "obs_dtype": "<f4"})
	want := c.reset(s.Session, map[string]any{"seed": 6})
	old := server.SetLittleEndian(false)
	defer server.SetLittleEndian(old)
	got := c.reset(s.Session, map[string]any{"seed": 6})
	assert.Equal(t, want, got)
}
