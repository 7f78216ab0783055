package server_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWholeGamesMatchTheirRecords plays whole games over HTTP (loopback) with random
// legal actions and checks every finished game's record against what the
// steps reported: the rewards summed over the game, the scores at done, the
// episode counters, and the plays the client itself sent.
func TestWholeGamesMatchTheirRecords(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  map[string]any
	}{
		{"self-play, 3 players, 2 deals", map[string]any{"game": map[string]any{"players": 3, "deals": 2}}},
		{"self-play, 4 players, 1 deal, dealt first by seat 2", map[string]any{"game": map[string]any{"players": 4, "deals": 1, "first_dealer": 2}}},
		{"seat 0 against heuristic bots, 5 players", map[string]any{"game": map[string]any{"players": 5, "deals": 1}, "learner_seats": []int{0}, "opponent": "heuristic"}},
		{"seats 1 and 3 against random bots, 6 players", map[string]any{"game": map[string]any{"players": 6, "deals": 1}, "learner_seats": []int{1, 3}, "opponent": "random"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, _ := serve(t, newServer(t)) // over a real loopback connection
			c := &client{tb: t, base: url}
			const n, games = 3, 2
			tc.req["num_envs"] = n
			tc.req["seed"] = 2024
			s := c.create(tc.req)
			p := s.Spec.Players
			learner := map[int]bool{}
			for _, seat := range s.Spec.LearnerSeats {
				learner[seat] = true
			}
			rng := rand.New(rand.NewPCG(1, 2))
			b := c.reset(s.Session, map[string]any{"seed": 2024})
			sums := make([][]float64, n) // rewards of the game in progress
			sent := make([][][2]int, n)  // (seat, card) the client played
			finished := make([]int, n)
			for i := range sums {
				sums[i] = make([]float64, p)
			}
			for steps := 0; minOf(finished) < games; steps++ {
				require.Less(t, steps, 5000, "games never end")
				player := b.Player.Data
				acts := legalActions(b.Mask.Data, n, func(i, k int) int { return rng.IntN(k) })
				for i, a := range acts {
					seat := int(int8(player[i]))
					require.True(t, learner[seat], "env %d: seat %d to act is not a learner seat", i, seat)
					sent[i] = append(sent[i], [2]int{seat, int(a)})
				}
				b = c.step(s.Session, acts)
				rew, scores, episode := b.rewards(), b.scores(), b.episode()
				for i := range n {
					for seat := range p {
						sums[i][seat] += float64(rew[i*p+seat])
					}
					if b.Done.Data[i] == 0 {
						assert.Equal(t, make([]int32, p), scores[i*p:(i+1)*p], "env %d: scores while not done", i)
						continue
					}
					finished[i]++
					assert.Equal(t, int64(finished[i]), episode[i], "env %d: episode counter", i)
					r := c.record(s.Session, i)
					require.NotNil(t, r.Finished, "env %d: done without a finished record", i)
					checkRecord(t, r.Finished, p)
					for seat := range p {
						assert.Equal(t, float64(scores[i*p+seat]), math.Round(sums[i][seat]), "env %d seat %d: rewards over the game vs score", i, seat)
						assert.Equal(t, int(scores[i*p+seat]), r.Finished.Totals[seat], "env %d seat %d: record total vs score", i, seat)
					}
					var mine [][2]int
					for _, d := range r.Finished.Deals {
						for _, pl := range d.Plays {
							if learner[pl[0]] {
								mine = append(mine, pl)
							}
						}
					}
					assert.Equal(t, sent[i], mine, "env %d: the learner plays in the record are the ones sent", i)
					require.NotNil(t, r.Current)
					assert.Len(t, r.Current.Deals, 1, "env %d: the next game has begun", i)
					sent[i] = sent[i][:0]
					clear(sums[i])
				}
			}
		})
	}
}

func minOf(xs []int) int {
	m := xs[0]
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}

// checkRecord checks a finished game's record on its own terms.
func checkRecord(tb testing.TB, r *gameRecord, p int) {
	tb.Helper()
	require.Len(tb, r.Deals, r.Game.Int("deals"))
	totals := make([]int, p)
	for k, d := range r.Deals {
		require.True(tb, d.Done, "deal %d not done", k)
		require.Len(tb, d.Scores, p)
		assert.Equal(tb, (r.Game.Int("first_dealer")+k)%p, d.Dealer, "deal %d dealer", k)
		require.Len(tb, d.Hands, p)
		require.Len(tb, d.Plays, 15*p, "deal %d plays", k)
		held := map[int]int{}
		for seat, h := range d.Hands {
			require.Len(tb, h, 15)
			for _, card := range h {
				held[card] = seat
			}
		}
		for j, pl := range d.Plays {
			seat, ok := held[pl[1]]
			require.True(tb, ok, "deal %d play %d: card %d not dealt or played twice", k, j, pl[1])
			assert.Equal(tb, seat, pl[0], "deal %d play %d: card %d played by a seat that did not hold it", k, j, pl[1])
			delete(held, pl[1])
		}
		for seat := range p {
			totals[seat] += d.Scores[seat]
		}
	}
	assert.Equal(tb, totals, r.Totals, "totals are the sum of the deal scores")
}

func TestZeroSumRewards(t *testing.T) {
	c := newClient(t)
	s := c.create(map[string]any{"num_envs": 4, "seed": 8, "reward": "zero_sum", "game": map[string]any{"players": 3, "deals": 1}})
	assert.Equal(t, "zero_sum", s.Spec.Reward)
	b := c.reset(s.Session, map[string]any{"seed": 8})
	nonzero := false
	for range 45 {
		b = c.step(s.Session, legalActions(b.Mask.Data, 4, func(i, k int) int { return k - 1 }))
		rew := b.rewards()
		for i := range 4 {
			sum := 0.0
			for seat := range 3 {
				sum += float64(rew[i*3+seat])
				nonzero = nonzero || rew[i*3+seat] != 0
			}
			assert.InDelta(t, 0, sum, 1e-3, "env %d: zero-sum rewards add up to %v", i, sum)
		}
	}
	assert.True(t, nonzero, "a whole deal passed without a reward")
}
