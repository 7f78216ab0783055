package games_test

import (
	"math"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/games"
)

// rewardsOf plays n envs of game name (default parameters, self-play) with
// random legal actions until every env has finished a game, and returns
// each step's rewards summed per env and seat over its first game, with
// the scores that game ended with.
func rewardsOf(t *testing.T, name string, mode env.RewardMode, n int) (sums [][]float64, scores [][]int32) {
	t.Helper()
	reg := games.Default()
	typ, err := reg.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	g, err := typ.Default()
	if err != nil {
		t.Fatal(err)
	}
	v, err := env.NewVec(g, env.VecConfig{NumEnvs: n, Seed: 11, Reward: mode, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	p, a := g.NumPlayers(), g.NumDistinctActions()
	sums, scores = make([][]float64, n), make([][]int32, n)
	for i := range n {
		sums[i] = make([]float64, p)
	}
	rng := env.NewRNG(5, 0)
	actions := make([]int32, n)
	for left := n; left > 0; {
		for i := range n {
			actions[i] = env.Skip
			if scores[i] != nil {
				continue
			}
			var legal []int32
			for k, ok := range v.Mask()[i*a : (i+1)*a] {
				if ok == 1 {
					legal = append(legal, int32(k))
				}
			}
			actions[i] = legal[rng.IntN(len(legal))]
		}
		if err := v.Step(actions); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if actions[i] == env.Skip {
				continue
			}
			for s := range p {
				sums[i][s] += float64(v.Rewards()[i*p+s])
			}
			if v.Done()[i] == 1 {
				scores[i] = append([]int32(nil), v.Scores()[i*p:(i+1)*p]...)
				left--
			}
		}
	}
	return sums, scores
}

func TestZeroSumRewardKeepsTheReturnsOfAZeroSumGame(t *testing.T) {
	// The duel pays +1 / -1 / 0 (DUEL.md: zero_sum and points are the same).
	// Own minus the mean of the other seat would pay +2 / -2.
	sums, scores := rewardsOf(t, "duel", env.RewardZeroSum, 64)
	decisive := 0
	for i := range sums {
		for s := range sums[i] {
			if sums[i][s] != float64(scores[i][s]) {
				t.Fatalf("env %d seat %d: zero_sum rewards sum to %v, want the return %d", i, s, sums[i][s], scores[i][s])
			}
		}
		if scores[i][0] != 0 {
			decisive++
		}
	}
	if decisive == 0 {
		t.Fatal("no decisive duel in 64 random games: the test shows nothing")
	}
}

func TestZeroSumRewardOfTheCardGameIsOwnMinusTheMeanOfTheOthers(t *testing.T) {
	sums, scores := rewardsOf(t, "david_goliath", env.RewardZeroSum, 16)
	for i := range sums {
		p := len(scores[i])
		var total float64
		for _, x := range scores[i] {
			total += float64(x)
		}
		for s := range sums[i] {
			want := float64(scores[i][s]) - (total-float64(scores[i][s]))/float64(p-1)
			if math.Abs(sums[i][s]-want) > 1e-3 {
				t.Fatalf("env %d seat %d: zero_sum rewards sum to %v, want %v (own minus the mean of the others)", i, s, sums[i][s], want)
			}
		}
	}
}

func TestZeroSumRewardDefinition(t *testing.T) {
	zs, gs := &env.Type{ZeroSum: true}, &env.Type{}
	for _, c := range []struct {
		typ      *env.Type
		own, sum float64
		n        int
		want     float64
	}{
		{zs, 1, 0, 2, 1}, {zs, -1, 0, 2, -1}, {zs, 0, 0, 2, 0},
		{gs, 1, 0, 2, 2}, {gs, 10, 10, 4, 10}, {gs, 4, 10, 3, 1},
	} {
		if got := env.ZeroSumReward(c.typ, c.own, c.sum, c.n); got != c.want {
			t.Errorf("ZeroSumReward(ZeroSum=%v, %v, %v, %d) = %v, want %v", c.typ.ZeroSum, c.own, c.sum, c.n, got, c.want)
		}
	}
}
