package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/env/testgame"
)

// The proof of the game interface: Nim, a game the server knows nothing
// of, registered only here, is listed, created, stepped (plain and packed),
// recorded (the record replays) and evaluated through the HTTP API.

func nimServer(t *testing.T) (*client, *env.Registry) {
	reg := games.Default()
	require.NoError(t, testgame.Register(reg))
	return &client{tb: t, h: newServerOf(t, reg).Handler()}, reg
}

type gamesList struct {
	Games []struct {
		Name       string `json:"name"`
		Default    bool   `json:"default"`
		Players    []int  `json:"players"`
		NumActions int    `json:"num_actions"`
		Params     []struct {
			Name     string `json:"name"`
			Default  int    `json:"default"`
			Min, Max int
		} `json:"params"`
		Obs struct {
			Shape []int `json:"shape"`
		} `json:"obs"`
		Bots []string `json:"bots"`
	} `json:"games"`
}

func TestGamesListsEveryRegisteredGame(t *testing.T) {
	c, _ := nimServer(t)
	for _, ct := range []string{ctJSON, ctMsgpack} {
		a := c.do("GET", "/v1/games", ct, nil)
		require.Equal(t, http.StatusOK, a.Status, "%s", a.Body)
		var l gamesList
		decodeAnswer(t, a, &l)
		require.Len(t, l.Games, 3)
		require.Equal(t, "david_goliath", l.Games[0].Name)
		require.True(t, l.Games[0].Default)
		require.Equal(t, 90, l.Games[0].NumActions)
		require.Equal(t, []int{3, 4, 5, 6}, l.Games[0].Players)
		require.Equal(t, []int{874}, l.Games[0].Obs.Shape)
		require.Equal(t, "duel", l.Games[1].Name)
		nim := l.Games[2]
		require.Equal(t, "nim", nim.Name)
		require.False(t, nim.Default)
		require.Equal(t, []int{2, 3}, nim.Players)
		require.Equal(t, 3, nim.NumActions)
		require.Equal(t, []string{"greedy", "random"}, nim.Bots)
		require.Len(t, nim.Params, 3)
		require.Equal(t, "heap", nim.Params[1].Name)
		require.Equal(t, 10, nim.Params[1].Default)
	}
	// A server of the default registry does not know Nim.
	d := &client{tb: t, h: newServer(t).Handler()}
	e := requireError(t, d.do("POST", "/v1/sessions", ctJSON, js(t, map[string]any{"game": map[string]any{"name": "nim"}})), 400, "bad_request")
	require.Contains(t, e.Error.Message, "nim")
}

type nimRecord struct {
	Game    map[string]any `json:"game"`
	Actions []int          `json:"actions"`
	Returns []float64      `json:"returns"`
	Seed    *uint64        `json:"seed"`
	Deals   []any          `json:"deals"`
}

func TestNimThroughTheServer(t *testing.T) {
	c, reg := nimServer(t)
	const n = 8
	req := map[string]any{"game": map[string]any{"name": "nim", "players": 3, "heap": 7, "take": 2},
		"num_envs": n, "seed": 5, "learner_seats": []int{0, 2}, "opponent": "random"}
	s := c.create(req)
	require.Equal(t, 3, s.Spec.Players)
	require.Equal(t, 2, s.Spec.NumActions)
	require.Equal(t, []int{5}, s.Spec.Obs.Shape)
	require.Equal(t, []int{0, 2}, s.Spec.LearnerSeats)
	require.Equal(t, []string{"greedy", "random"}, s.Bots)
	req["packing"] = "bits"
	p := c.create(req)

	b := c.reset(s.Session, map[string]any{"seed": 5})
	pa := c.do("POST", "/v1/sessions/"+p.Session+"/reset", ctMsgpack, mp(t, map[string]any{"seed": 5}))
	games := 0
	for step := range 60 {
		var pb packedBatch
		decodeAnswer(t, pa, &pb)
		require.Equal(t, []int{n, 1}, pb.ObsBits.Shape)  // 5 elements: one byte of bits
		require.Equal(t, []int{n, 1}, pb.ObsExtra.Shape) // the heap (max 7) rides as a byte
		for i := range n {
			got := make([]byte, 5)
			for k := range 5 {
				got[k] = pb.ObsBits.Data[i] >> k & 1
			}
			got[0] = pb.ObsExtra.Data[i]
			require.Equal(t, b.Obs.Data[i*5:(i+1)*5], got, "step %d env %d: packed obs", step, i)
			require.Equal(t, b.Mask.Data[i*2]|b.Mask.Data[i*2+1]<<1, pb.MaskBits.Data[i], "step %d env %d: packed mask", step, i)
		}
		require.Equal(t, b.Rewards.Data, pb.Rewards.Data)
		acts := make([]int32, n)
		for i := range n {
			player := int(int8(b.Player.Data[i]))
			require.Contains(t, []int{0, 2}, player, "a learner seat acts")
			acts[i] = 0
			if b.Mask.Data[i*2+1] == 1 && (i+step)%2 == 1 {
				acts[i] = 1
			}
		}
		b = c.step(s.Session, acts)
		pa = c.do("POST", "/v1/sessions/"+p.Session+"/step", ctMsgpack, stepBody(t, acts))
		require.Equal(t, http.StatusOK, pa.Status, "%s", pa.Body)
		rew, sc := b.rewards(), b.scores()
		for i := range n {
			if b.Done.Data[i] == 1 {
				games++
				var sum float32
				for seat := range 3 {
					sum += float32(sc[i*3+seat])
				}
				require.Equal(t, float32(1), sum, "one winner")
			}
			for seat := range 3 {
				require.Equal(t, float32(sc[i*3+seat]), rew[i*3+seat], "win-loss rewards come at the end")
			}
		}
	}
	require.Greater(t, games, n)

	// Records: the generic form, which replays.
	for k := range n {
		a := c.do("GET", "/v1/sessions/"+s.Session+"/envs/"+string(rune('0'+k))+"/record", ctJSON, nil)
		require.Equal(t, http.StatusOK, a.Status, "%s", a.Body)
		var r struct{ Finished, Current *nimRecord }
		decodeAnswer(t, a, &r)
		require.NotNil(t, r.Finished)
		require.Equal(t, "nim", r.Finished.Game["name"])
		require.Nil(t, r.Finished.Deals)
		require.NotNil(t, r.Finished.Seed)
		rec := &env.Record{Game: "nim", Values: env.Values{"players": 3, "heap": 7, "take": 2},
			Actions: r.Finished.Actions, Returns: r.Finished.Returns, Terminal: true, HasSeed: true, Seed: *r.Finished.Seed}
		_, err := rec.Replay(reg)
		require.NoError(t, err, "env %d's finished record replays", k)
	}

	// Errors name the field, from the engine's typed errors.
	for field, game := range map[string]map[string]any{
		"game.heap":    {"name": "nim", "heap": 0},
		"game.take":    {"name": "nim", "take": 9},
		"game.players": {"name": "nim", "players": 4},
		"game.deals":   {"name": "nim", "deals": 4},
		"game.name":    {"name": "go"},
	} {
		a := c.do("POST", "/v1/sessions", ctMsgpack, mp(t, map[string]any{"game": game}))
		var e struct {
			Error map[string]any `json:"error"`
		}
		decodeAnswer(t, a, &e)
		require.Equal(t, http.StatusBadRequest, a.Status, "%s", a.Body)
		require.Equal(t, field, e.Error["field"], "%s", a.Body)
	}
	a := c.do("POST", "/v1/sessions", ctJSON, js(t, map[string]any{"game": map[string]any{"name": "nim"}, "learner_seats": []int{0}, "opponent": "heuristic"}))
	requireError(t, a, 400, "bad_request")
	a = c.do("POST", "/v1/sessions/"+s.Session+"/step", ctJSON, js(t, map[string]any{"actions": []int{2, 0, 0, 0, 0, 0, 0, 0}}))
	requireError(t, a, 400, "bad_request") // action 2 is out of this game's range 0..1
}

// Evaluated through the server: a learner playing Nim's winning strategy
// (read from the observation) beats the random opponent far more often
// than a learner that always takes one stone.
func TestNimEvaluatedThroughTheServer(t *testing.T) {
	c, _ := nimServer(t)
	winRate := func(smart bool) float64 {
		const n = 32
		s := c.create(map[string]any{"game": map[string]any{"name": "nim", "heap": 10, "take": 3},
			"num_envs": n, "seed": 11, "learner_seats": []int{0}, "opponent": "random"})
		b := c.reset(s.Session, map[string]any{"seed": 11})
		wins, games := 0, 0
		for games < 200 {
			acts := make([]int32, n)
			for i := range n {
				heap := int(b.Obs.Data[i*4])
				if k := heap % 4; smart && k > 0 {
					acts[i] = int32(k - 1)
				}
			}
			b = c.step(s.Session, acts)
			sc := b.scores()
			for i := range n {
				if b.Done.Data[i] == 1 {
					games++
					wins += int(sc[i*2])
				}
			}
		}
		return float64(wins) / float64(games)
	}
	smart, naive := winRate(true), winRate(false)
	require.Greater(t, smart, 0.7)
	require.Greater(t, smart, naive+0.2)
}
