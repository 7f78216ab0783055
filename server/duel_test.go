package server_test

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/duel"
	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/obs"
	"github.com/davidgoliath/dgenv/server/wire"
)

// The duel through the server of the default registry: nothing in server/
// knows it beyond the registry. Listed with its spaces, created self-play
// and learner-seat (against its own heuristic), stepped with random legal
// actions to many game ends, and every finished game's record replays to
// the same end and returns.

func TestDuelListed(t *testing.T) {
	c := newClient(t)
	for _, ct := range []string{ctJSON, ctMsgpack} {
		a := c.do("GET", "/v1/games", ct, nil)
		require.Equal(t, http.StatusOK, a.Status, "%s", a.Body)
		var l gamesList
		decodeAnswer(t, a, &l)
		require.Len(t, l.Games, 2)
		require.Equal(t, "david_goliath", l.Games[0].Name)
		require.Equal(t, 90, l.Games[0].NumActions)
		require.Equal(t, []int{874}, l.Games[0].Obs.Shape)
		d := l.Games[1]
		require.Equal(t, duel.Name, d.Name)
		require.False(t, d.Default)
		require.Equal(t, []int{2}, d.Players)
		require.Equal(t, duel.NumActions, d.NumActions)
		require.Equal(t, 117, d.NumActions)
		require.Equal(t, []int{duel.ObsSize}, d.Obs.Shape)
		require.Equal(t, []int{461}, d.Obs.Shape)
		require.Equal(t, []string{"heuristic", "random", "search"}, d.Bots)
		require.Len(t, d.Params, 1)
		require.Equal(t, "max_rounds", d.Params[0].Name)
		require.Equal(t, 100, d.Params[0].Default)
	}
}

type duelRecord struct {
	Game    map[string]any `json:"game"`
	Actions []int          `json:"actions"`
	Returns []float64      `json:"returns"`
	Seed    *uint64        `json:"seed"`
	Deals   []any          `json:"deals"`
}

func TestDuelThroughTheServer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		req     map[string]any
		learner []int
	}{
		{"self-play", map[string]any{}, []int{0, 1}},
		{"Goliath (seat 0) against the heuristic", map[string]any{"learner_seats": []int{0}, "opponent": "heuristic"}, []int{0}},
		{"David (seat 1) against the heuristic", map[string]any{"learner_seats": []int{1}, "opponent": "heuristic"}, []int{1}},
		{"David against random, 30 rounds", map[string]any{"learner_seats": []int{1}, "opponent": "random", "max_rounds": 30}, []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, _ := serve(t, newServer(t)) // over a real loopback connection
			c := &client{tb: t, base: url}
			const n, perEnv = 4, 2
			rounds := 100
			g := map[string]any{"name": "duel"}
			if r, ok := tc.req["max_rounds"]; ok {
				g["max_rounds"] = r
				rounds = r.(int)
				delete(tc.req, "max_rounds")
			}
			tc.req["game"] = g
			tc.req["num_envs"] = n
			tc.req["seed"] = 77
			s := c.create(tc.req)
			require.Equal(t, 2, s.Spec.Players)
			require.Equal(t, 117, s.Spec.NumActions)
			require.Equal(t, []int{461}, s.Spec.Obs.Shape)
			require.Equal(t, tc.learner, s.Spec.LearnerSeats)
			require.Equal(t, []string{"heuristic", "random", "search"}, s.Bots)
			learner := map[int]bool{}
			for _, seat := range tc.learner {
				learner[seat] = true
			}
			rng := rand.New(rand.NewPCG(3, 4))
			b := c.reset(s.Session, map[string]any{"seed": 77})
			sums := make([][2]float64, n)
			sent := make([][]int, n) // actions the client sent, game by game
			finished := make([]int, n)
			outcomes := map[[2]int32]int{}
			for steps := 0; minOf(finished) < perEnv; steps++ {
				require.Less(t, steps, 20000, "games never end")
				require.Len(t, b.Mask.Data, n*117)
				require.Len(t, b.Obs.Data, n*461)
				acts := legalActions(b.Mask.Data, n, func(i, k int) int { return rng.IntN(k) })
				for i, a := range acts {
					seat := int(int8(b.Player.Data[i]))
					require.True(t, learner[seat], "env %d: seat %d to act is not a learner seat", i, seat)
					sent[i] = append(sent[i], int(a))
				}
				b = c.step(s.Session, acts)
				rew, scores, episode := b.rewards(), b.scores(), b.episode()
				for i := range n {
					sums[i][0] += float64(rew[2*i])
					sums[i][1] += float64(rew[2*i+1])
					if b.Done.Data[i] == 0 {
						assert.Equal(t, []float32{0, 0}, rew[2*i:2*i+2], "env %d: a reward before the end", i)
						continue
					}
					finished[i]++
					assert.Equal(t, int64(finished[i]), episode[i], "env %d: episode counter", i)
					sc := [2]int32{scores[2*i], scores[2*i+1]}
					outcomes[sc]++
					require.Contains(t, [][2]int32{{1, -1}, {-1, 1}, {0, 0}}, sc, "env %d: a duel ends +1/-1 or 0/0", i)
					assert.Equal(t, [2]float64{float64(sc[0]), float64(sc[1])}, sums[i], "env %d: the rewards over the game are its result", i)

					r := recordOf(t, c, s.Session, i)
					require.NotNil(t, r.Finished, "env %d: done without a finished record", i)
					require.Equal(t, "duel", r.Finished.Game["name"])
					require.EqualValues(t, rounds, r.Finished.Game["max_rounds"])
					require.Nil(t, r.Finished.Deals)
					require.NotNil(t, r.Finished.Seed)
					assert.Equal(t, []float64{float64(sc[0]), float64(sc[1])}, r.Finished.Returns)
					rec := &env.Record{Game: "duel", Values: env.Values{"max_rounds": rounds},
						Actions: r.Finished.Actions, Returns: r.Finished.Returns, Terminal: true, HasSeed: true, Seed: *r.Finished.Seed}
					st, err := rec.Replay(games.Default())
					require.NoError(t, err, "env %d's finished record replays", i)
					require.True(t, st.IsTerminal())
					if len(tc.learner) == 2 {
						assert.Equal(t, sent[i], r.Finished.Actions, "env %d: self-play: the record is the actions sent", i)
					} else {
						// The learner's actions are the record's actions taken by its seat.
						assert.Equal(t, sent[i], learnerActions(t, rec, tc.learner[0]), "env %d: the learner's actions in the record are the ones sent", i)
					}
					require.NotNil(t, r.Current, "env %d: the next game has begun", i)
					require.NotNil(t, r.Current.Seed)
					next := &env.Record{Game: "duel", Values: env.Values{"max_rounds": rounds}, Actions: r.Current.Actions, HasSeed: true, Seed: *r.Current.Seed}
					for _, seat := range tc.learner {
						assert.Empty(t, learnerActions(t, next, seat), "env %d: the next game's record holds only the bots' opening actions", i)
					}
					sent[i] = sent[i][:0]
					sums[i] = [2]float64{}
				}
			}
			t.Logf("outcomes (Goliath, David): %v", outcomes)
		})
	}
}

func recordOf(t *testing.T, c *client, id string, k int) struct{ Finished, Current *duelRecord } {
	a := c.do("GET", "/v1/sessions/"+id+"/envs/"+strconv.Itoa(k)+"/record", ctJSON, nil)
	require.Equal(t, http.StatusOK, a.Status, "%s", a.Body)
	var r struct{ Finished, Current *duelRecord }
	decodeAnswer(t, a, &r)
	return r
}

// learnerActions replays rec and returns the actions seat took.
func learnerActions(t *testing.T, rec *env.Record, seat int) []int {
	typ, err := games.Default().Lookup(rec.Game)
	require.NoError(t, err)
	g, err := typ.Make(rec.Values)
	require.NoError(t, err)
	s := g.NewInitialState(rec.Seed)
	var out []int
	for _, a := range rec.Actions {
		if s.CurrentPlayer() == seat {
			out = append(out, a)
		}
		require.NoError(t, s.ApplyAction(a))
	}
	return out
}

// Bad duel parameters and actions get the field-naming errors.
func TestDuelErrors(t *testing.T) {
	c := newClient(t)
	for field, game := range map[string]map[string]any{
		"game.max_rounds": {"name": "duel", "max_rounds": 0},
		"game.players":    {"name": "duel", "players": 3},
	} {
		a := c.do("POST", "/v1/sessions", ctJSON, js(t, map[string]any{"game": game}))
		require.Equal(t, http.StatusBadRequest, a.Status, "%s", a.Body)
		var e struct {
			Error map[string]any `json:"error"`
		}
		decodeAnswer(t, a, &e)
		require.Equal(t, field, e.Error["field"], "%s", a.Body)
	}
	a := c.do("POST", "/v1/sessions", ctJSON, js(t, map[string]any{"game": map[string]any{"name": "duel"}, "learner_seats": []int{0}, "opponent": "minimax"}))
	requireError(t, a, 400, "bad_request")
	s := c.create(map[string]any{"game": map[string]any{"name": "duel"}, "num_envs": 2, "seed": 1})
	b := c.reset(s.Session, map[string]any{"seed": 1})
	a = c.do("POST", "/v1/sessions/"+s.Session+"/step", ctMsgpack, stepBody(t, []int32{illegalAction(b.Mask.Data[:117], 0), 0}))
	requireError(t, a, 422, "illegal_action")
	a = c.do("POST", "/v1/sessions/"+s.Session+"/step", ctJSON, js(t, map[string]any{"actions": []int{117, 0}}))
	requireError(t, a, 400, "bad_request")
}

// A packed duel session answers the same batches as a plain one: the
// packing is the game's layout (its extra spans) and its 117-action mask.
func TestDuelPackedMatchesPlain(t *testing.T) {
	c := newClient(t)
	const n = 6
	req := map[string]any{"game": map[string]any{"name": "duel"}, "num_envs": n, "seed": 12, "learner_seats": []int{0}, "opponent": "random"}
	plain := c.create(req)
	req["packing"] = "bits"
	a := c.do("POST", "/v1/sessions", ctMsgpack, mp(t, req))
	require.Equal(t, http.StatusOK, a.Status, "%s", a.Body)
	var packed struct {
		Session string    `json:"session"`
		Spec    wire.Spec `json:"spec"`
	}
	decodeAnswer(t, a, &packed)
	pk := packed.Spec.Obs.Packed
	require.NotNil(t, pk)
	require.Equal(t, (117+7)/8, pk.MaskBytes)
	require.Equal(t, (461+7)/8, pk.ObsBytes)
	extra := make([]obs.Span, len(pk.Extra))
	for i, sp := range pk.Extra {
		extra[i] = obs.Span{Name: sp.Name, Offset: sp.Offset, Length: sp.Length}
	}
	unpack := obs.Packing{Bytes: pk.ObsBytes, Extra: extra, ExtraBytes: pk.ExtraBytes}

	b := c.reset(plain.Session, map[string]any{"seed": 12})
	pa := c.do("POST", "/v1/sessions/"+packed.Session+"/reset", ctMsgpack, mp(t, map[string]any{"seed": 12}))
	rng := rand.New(rand.NewPCG(7, 8))
	ends := 0
	for step := 0; ends < n; step++ {
		require.Less(t, step, 20000)
		require.Equal(t, http.StatusOK, pa.Status, "%s", pa.Body)
		var pb packedBatch
		decodeAnswer(t, pa, &pb)
		require.Nil(t, pb.Obs)
		o, m := make([]uint8, 461), make([]uint8, 117)
		for i := range n {
			unpack.Unpack(o, pb.ObsBits.Data[i*pk.ObsBytes:(i+1)*pk.ObsBytes], pb.ObsExtra.Data[i*pk.ExtraBytes:(i+1)*pk.ExtraBytes])
			require.Equal(t, b.Obs.Data[i*461:(i+1)*461], o, "step %d env %d: obs", step, i)
			obs.UnpackBits(m, pb.MaskBits.Data[i*pk.MaskBytes:(i+1)*pk.MaskBytes])
			require.Equal(t, b.Mask.Data[i*117:(i+1)*117], m, "step %d env %d: mask", step, i)
		}
		require.Equal(t, b.Rewards.Data, pb.Rewards.Data)
		require.Equal(t, b.Done.Data, pb.Done.Data)
		require.Equal(t, b.Scores.Data, pb.Scores.Data)
		for _, d := range b.Done.Data {
			ends += int(d)
		}
		acts := legalActions(b.Mask.Data, n, func(i, k int) int { return rng.IntN(k) })
		b = c.step(plain.Session, acts)
		pa = c.do("POST", "/v1/sessions/"+packed.Session+"/step", ctMsgpack, stepBody(t, acts))
	}
}
