package server_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/env/card"
	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/env/policy"
	"github.com/davidgoliath/dgenv/server"
	"github.com/davidgoliath/dgenv/server/wire"
)

// policyDir holds the parity model (env/policy/testdata) as <name>.onnx.
func policyDir(tb testing.TB, name string) (dir string, model []byte) {
	tb.Helper()
	model, err := os.ReadFile("../env/policy/testdata/parity.onnx")
	require.NoError(tb, err)
	dir = tb.TempDir()
	require.NoError(tb, os.WriteFile(filepath.Join(dir, name+".onnx"), model, 0o644))
	return dir, model
}

type parityCase struct {
	Obs    [][]uint8   `json:"obs"`
	Logits [][]float32 `json:"logits"`
}

func readParityCase(tb testing.TB) parityCase {
	tb.Helper()
	raw, err := os.ReadFile("../env/policy/testdata/parity.json")
	require.NoError(tb, err)
	var pc parityCase
	require.NoError(tb, json.Unmarshal(raw, &pc))
	return pc
}

type actAnswer struct {
	Policy  string  `json:"policy"`
	Actions tensor  `json:"actions"`
	Logits  *tensor `json:"logits"`
}

func TestPoliciesAreListedAndAct(t *testing.T) {
	dir, model := policyDir(t, "parity")
	sum := sha256.Sum256(model)
	ps, err := policy.LoadFS(games.Default(), os.DirFS(dir), map[string]string{"parity": hex.EncodeToString(sum[:])})
	require.NoError(t, err)
	srv, err := server.New(testConfig(), nil, server.WithPolicies(ps))
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	c := &client{tb: t, h: srv.Handler()}

	t.Run("GET /v1/policies lists the loaded policy with its digest", func(t *testing.T) {
		a := c.do("GET", "/v1/policies", "", nil)
		require.Equal(t, http.StatusOK, a.Status, "%s", a.Body)
		var list struct {
			Policies []struct {
				Name, Bot, SHA256 string
				Game              wire.GameSpec
				ObsSize           int `json:"obs_size"`
				NumActions        int `json:"num_actions"`
			}
		}
		decodeAnswer(t, a, &list)
		require.Len(t, list.Policies, 1)
		p := list.Policies[0]
		require.Equal(t, "parity", p.Name)
		require.Equal(t, "policy:parity", p.Bot)
		require.Equal(t, hex.EncodeToString(sum[:]), p.SHA256)
		require.Equal(t, 874, p.ObsSize)
		require.Equal(t, card.NumActions, p.NumActions)
		require.Equal(t, "david_goliath", p.Game["name"])
		require.EqualValues(t, 4, p.Game["players"])
	})

	pc := readParityCase(t)
	n := len(pc.Obs)
	var obsU8 []byte
	for _, r := range pc.Obs {
		obsU8 = append(obsU8, r...)
	}
	mask := make([]byte, n*card.NumActions)
	for r := range n {
		for a := 0; a < card.NumActions; a += 3 + r {
			mask[r*card.NumActions+a] = 1
		}
	}
	for _, dtype := range []string{"<u1", "|u1", "<f4"} {
		t.Run("act with "+dtype+" observations gives the reference logits and the best legal actions", func(t *testing.T) {
			data := obsU8
			if dtype == "<f4" {
				data = make([]byte, 4*len(obsU8))
				for i, v := range obsU8 {
					binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(v)))
				}
			}
			body := mp(t, map[string]any{
				"obs":    map[string]any{"dtype": dtype, "shape": []int{n, 874}, "data": data},
				"mask":   map[string]any{"dtype": "|u1", "shape": []int{n, card.NumActions}, "data": mask},
				"logits": true,
			})
			a := c.do("POST", "/v1/policies/parity/act", ctMsgpack, body)
			require.Equal(t, http.StatusOK, a.Status, "%s", a.Body)
			var ans actAnswer
			decodeAnswer(t, a, &ans)
			require.NotNil(t, ans.Logits)
			logits := le[float32](ans.Logits.Data)
			actions := le[int32](ans.Actions.Data)
			require.Len(t, actions, n)
			for r := range n {
				best := -1
				for a := range card.NumActions {
					got, want := logits[r*card.NumActions+a], pc.Logits[r][a]
					require.InDelta(t, want, got, 1e-4, "row %d action %d logit", r, a)
					if mask[r*card.NumActions+a] == 1 && (best < 0 || pc.Logits[r][a] > pc.Logits[r][best]) {
						best = a
					}
				}
				require.Equal(t, int32(best), actions[r], "row %d greedy action", r)
			}
		})
	}

	t.Run("sampled actions are legal and repeat with the seed", func(t *testing.T) {
		req := map[string]any{
			"obs":    map[string]any{"dtype": "<u1", "shape": []int{n, 874}, "data": obsU8},
			"mask":   map[string]any{"dtype": "<u1", "shape": []int{n, card.NumActions}, "data": mask},
			"greedy": false, "seed": 5, "temperature": 2.0,
		}
		var first []int32
		for range 2 {
			a := c.do("POST", "/v1/policies/parity/act", ctJSON, js(t, req))
			require.Equal(t, http.StatusOK, a.Status, "%s", a.Body)
			var ans actAnswer
			decodeAnswer(t, a, &ans)
			acts := le[int32](ans.Actions.Data)
			for r, x := range acts {
				require.Equal(t, byte(1), mask[r*card.NumActions+int(x)], "row %d sampled illegal %d", r, x)
			}
			if first == nil {
				first = acts
			} else {
				require.Equal(t, first, acts)
			}
		}
	})

	t.Run("bad act requests are refused", func(t *testing.T) {
		noLegal := make([]byte, n*card.NumActions)
		cases := []struct {
			name, path string
			body       map[string]any
			status     int
			code       string
		}{
			{"an unknown policy", "/v1/policies/nope/act", map[string]any{}, 404, "not_found"},
			{"no observations", "/v1/policies/parity/act", map[string]any{"mask": map[string]any{"dtype": "<u1", "shape": []int{n, 90}, "data": mask}}, 400, "bad_request"},
			{"the wrong width", "/v1/policies/parity/act", map[string]any{
				"obs":  map[string]any{"dtype": "<u1", "shape": []int{n, 873}, "data": obsU8[:n*873]},
				"mask": map[string]any{"dtype": "<u1", "shape": []int{n, 90}, "data": mask}}, 400, "bad_request"},
			{"a row with nothing legal", "/v1/policies/parity/act", map[string]any{
				"obs":  map[string]any{"dtype": "<u1", "shape": []int{n, 874}, "data": obsU8},
				"mask": map[string]any{"dtype": "<u1", "shape": []int{n, 90}, "data": noLegal}}, 400, "bad_request"},
			{"an unknown field", "/v1/policies/parity/act", map[string]any{"obsx": 1}, 400, "bad_request"},
			{"a zero temperature", "/v1/policies/parity/act", map[string]any{
				"obs":  map[string]any{"dtype": "<u1", "shape": []int{n, 874}, "data": obsU8},
				"mask": map[string]any{"dtype": "<u1", "shape": []int{n, 90}, "data": mask}, "greedy": false, "temperature": 0.0}, 400, "bad_request"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				requireError(t, c.do("POST", tc.path, ctMsgpack, mp(t, tc.body)), tc.status, tc.code)
			})
		}
	})

	t.Run("a session plays against the policy as its opponent", func(t *testing.T) {
		cr := c.create(map[string]any{"game": map[string]any{"players": 4, "deals": 1}, "num_envs": 8, "seed": 3, "learner_seats": []int{0}, "opponent": "policy:parity"})
		require.Contains(t, cr.Bots, "policy:parity")
		b := c.reset(cr.Session, map[string]any{})
		games := 0
		for range 200 {
			for _, p := range b.Player.Data {
				require.Equal(t, byte(0), p, "only the learner seat is ever to act")
			}
			b = c.step(cr.Session, legalActions(b.Mask.Data, 8, func(i, k int) int { return 0 }))
			for _, d := range b.Done.Data {
				games += int(d)
			}
		}
		require.Positive(t, games)
	})

	t.Run("a packed session against the policy gives the plain session's batches", func(t *testing.T) {
		create := map[string]any{"game": map[string]any{"players": 4, "deals": 1}, "num_envs": 5, "seed": 8, "learner_seats": []int{2}, "opponent": "policy:parity"}
		plain := c.create(create)
		create["packing"] = "bits"
		a := c.do("POST", "/v1/sessions", ctMsgpack, mp(t, create))
		require.Equal(t, 200, a.Status, "%s", a.Body)
		var pc struct {
			Session string `json:"session"`
			Spec    struct {
				Obs struct {
					Packed *packedSpec `json:"packed"`
				} `json:"obs"`
			} `json:"spec"`
		}
		decodeAnswer(t, a, &pc)
		want := c.reset(plain.Session, map[string]any{"seed": 8})
		var got packedBatch
		decodeAnswer(t, c.do("POST", "/v1/sessions/"+pc.Session+"/reset", ctMsgpack, mp(t, map[string]any{"seed": 8})), &got)
		for round := range 80 {
			require.Equal(t, want, got.unpack(t, pc.Spec.Obs.Packed, 5, 874), "round %d", round)
			acts := legalActions(want.Mask.Data, 5, func(i, k int) int { return (i + round) % k })
			want = c.step(plain.Session, acts)
			got = packedBatch{}
			decodeAnswer(t, c.do("POST", "/v1/sessions/"+pc.Session+"/step", ctMsgpack, stepBody(t, acts)), &got)
		}
	})

	t.Run("a table of the policy and other bots", func(t *testing.T) {
		cr := c.create(map[string]any{"game": map[string]any{"players": 4, "deals": 1}, "num_envs": 4, "seed": 2,
			"opponents": []any{"policy:parity", nil, "heuristic", "random"}})
		require.Equal(t, []int{1}, cr.Spec.LearnerSeats)
		b := c.reset(cr.Session, map[string]any{})
		for range 40 {
			for _, p := range b.Player.Data {
				require.Equal(t, byte(1), p, "only the learner seat is ever to act")
			}
			b = c.step(cr.Session, legalActions(b.Mask.Data, 4, func(i, k int) int { return 0 }))
		}
		a := c.do("POST", "/v1/sessions", ctJSON, js(t, map[string]any{"game": map[string]any{"players": 5}, "opponents": []any{nil, "policy:parity", "random", "random", "random"}}))
		e := requireError(t, a, 400, "bad_request")
		require.Contains(t, e.Error.Message, "seat 1")
	})

	t.Run("a session of another player count cannot use it", func(t *testing.T) {
		a := c.do("POST", "/v1/sessions", ctMsgpack, mp(t, map[string]any{"game": map[string]any{"players": 5}, "num_envs": 2, "learner_seats": []int{0}, "opponent": "policy:parity"}))
		requireError(t, a, 400, "bad_request")
	})
}

func TestSearchOpponentIsCappedByMaxSearchEnvs(t *testing.T) {
	c := newClient(t, func(cfg *server.Config) { cfg.Limits.MaxSearchEnvs = 4 })
	a := c.do("POST", "/v1/sessions", ctMsgpack, mp(t, map[string]any{"num_envs": 5, "learner_seats": []int{0}, "opponent": "search"}))
	requireError(t, a, 400, "bad_request")
	cr := c.create(map[string]any{"num_envs": 2, "seed": 1, "game": map[string]any{"deals": 1}, "learner_seats": []int{0}, "opponent": "search"})
	b := c.reset(cr.Session, map[string]any{})
	b = c.step(cr.Session, legalActions(b.Mask.Data, 2, func(i, k int) int { return k - 1 }))
	require.Len(t, b.Player.Data, 2)
}

// Two servers in one process share no bots: a policy loaded into one is an
// opponent there only (registries are values, not globals).
func TestPoliciesAreBotsOfTheirServerOnly(t *testing.T) {
	dir, _ := policyDir(t, "parity")
	ps, err := policy.LoadFS(games.Default(), os.DirFS(dir), nil)
	require.NoError(t, err)
	with, err := server.New(testConfig(), nil, server.WithPolicies(ps))
	require.NoError(t, err)
	t.Cleanup(with.Close)
	without := newServer(t)
	req := map[string]any{"game": map[string]any{"players": 4}, "learner_seats": []int{0}, "opponent": "policy:parity"}
	a := &client{tb: t, h: with.Handler()}
	require.Contains(t, a.create(req).Bots, "policy:parity")
	b := &client{tb: t, h: without.Handler()}
	e := requireError(t, b.do("POST", "/v1/sessions", ctJSON, js(t, req)), http.StatusBadRequest, "bad_request")
	require.Contains(t, e.Error.Message, "policy:parity")
}

// A bot's cost comes from the bot (env.Costly), not its name: the search
// guided by a policy is capped like "search".
func TestGuidedSearchIsCappedLikeSearch(t *testing.T) {
	dir, _ := policyDir(t, "parity")
	ps, err := policy.LoadFS(games.Default(), os.DirFS(dir), nil)
	require.NoError(t, err)
	srv, err := server.New(testConfig(func(c *server.Config) { c.Limits.MaxSearchEnvs = 2 }), nil, server.WithPolicies(ps))
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	c := &client{tb: t, h: srv.Handler()}
	for _, bot := range []string{"search", "search:policy:parity"} {
		req := map[string]any{"num_envs": 3, "learner_seats": []int{0}, "opponent": bot}
		e := requireError(t, c.do("POST", "/v1/sessions", ctJSON, js(t, req)), http.StatusBadRequest, "bad_request")
		require.Contains(t, e.Error.Message, "max_search_envs", bot)
	}
	req := map[string]any{"num_envs": 3, "learner_seats": []int{0}, "opponent": "policy:parity"}
	require.Contains(t, c.create(req).Bots, "search:policy:parity")
}

// TestNonFiniteLogitsFailTheRequest: a loaded policy whose network gives
// NaN logits (finite weights: env/policy/testdata/overflow.onnx) fails the
// act request and the session it plays in, instead of playing the first
// legal action.
func TestNonFiniteLogitsFailTheRequest(t *testing.T) {
	model, err := os.ReadFile("../env/policy/testdata/overflow.onnx")
	require.NoError(t, err)
	p, err := policy.Parse(games.Default(), "overflow", model)
	require.NoError(t, err)
	srv, err := server.New(testConfig(), nil, server.WithPolicies(map[string]*policy.Policy{"overflow": p}))
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	c := &client{tb: t, h: srv.Handler()}

	t.Run("act answers 500 naming the non-finite logits", func(t *testing.T) {
		const n = 130 // more than one worker's rows
		obs := make([]byte, n*874)
		mask := make([]byte, n*card.NumActions)
		for r := range n {
			obs[r*874], obs[r*874+1] = 1, 1
			mask[r*card.NumActions+r%card.NumActions] = 1
		}
		a := c.do("POST", "/v1/policies/overflow/act", ctMsgpack, mp(t, map[string]any{
			"obs":  map[string]any{"dtype": "<u1", "shape": []int{n, 874}, "data": obs},
			"mask": map[string]any{"dtype": "<u1", "shape": []int{n, card.NumActions}, "data": mask},
		}))
		e := requireError(t, a, http.StatusInternalServerError, "internal")
		require.Contains(t, e.Error.Message, "non-finite logits")
		require.Contains(t, e.Error.Message, `"overflow"`)
	})
	t.Run("a session it plays in fails at its first decision and is deleted", func(t *testing.T) {
		c := &client{tb: t, h: srv.Handler()}
		// The opponents play up to seat 0's first turn while the session is
		// made, or at its first step if seat 0 leads: each first dealer
		// fails one way or the other, and both ways are seen.
		var atCreate, atStep int
		for dealer := range 4 {
			a := c.do("POST", "/v1/sessions", ctMsgpack, mp(t, map[string]any{"num_envs": 1, "seed": 1, "learner_seats": []int{0},
				"opponent": "policy:overflow", "game": map[string]any{"players": 4, "deals": 1, "first_dealer": dealer}}))
			path := ""
			if a.Status == http.StatusOK {
				var s created
				decodeAnswer(t, a, &s)
				path = "/v1/sessions/" + s.Session
				b := c.reset(s.Session, map[string]any{})
				a = c.do("POST", path+"/step", ctMsgpack, stepBody(t, legalActions(b.Mask.Data, 1, func(i, k int) int { return 0 })))
				atStep++
			} else {
				atCreate++
			}
			e := requireError(t, a, http.StatusInternalServerError, "internal")
			require.Contains(t, e.Error.Message, "non-finite logits")
			if path != "" {
				requireError(t, c.do("GET", path, "", nil), http.StatusNotFound, "not_found")
			}
		}
		require.Positive(t, atCreate, "no create failed")
		require.Positive(t, atStep, "no step failed")
	})
}
