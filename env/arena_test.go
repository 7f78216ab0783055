package env_test

import (
	"math"
	"reflect"
	"testing"

	"github.com/davidgoliath/dgenv/env"
)

func TestPlayMatchIsReproducibleFromItsSeedWhateverTheWorkers(t *testing.T) {
	cfg := env.MatchConfig{Params: env.Params{Players: 4, Deals: 2}, Agents: []string{"heuristic", "random", "random", "random"}, Games: 40, Seed: 11}
	cfg.Workers = 1
	a, err := env.PlayMatch(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Workers = 4
	b, err := env.PlayMatch(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatal("PlayMatch with 1 and 4 workers gave different results")
	}
	cfg.Seed = 12
	c, _ := env.PlayMatch(cfg)
	if reflect.DeepEqual(a.Scores, c.Scores) {
		t.Fatal("PlayMatch with another seed gave the same scores")
	}
}

// Duplicate deals: each group of P games replays one deal seed with every
// rotation of the seating, and the same deal seed really deals the same
// cards whoever sits where and however they play.
func TestDuplicateMatchReplaysTheSameDeals(t *testing.T) {
	const p = 4
	res, err := env.PlayMatch(env.MatchConfig{Params: env.Params{Players: p, Deals: 2}, Agents: []string{"heuristic", "random", "heuristic", "random"}, Games: 10, Seed: 5, Duplicate: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Scores) != 12 {
		t.Fatalf("duplicate match of 10 games played %d, want 12 (rounded up to a multiple of %d)", len(res.Scores), p)
	}
	for k := range res.Seeds {
		if res.Seeds[k] != res.Seeds[k-k%p] {
			t.Fatalf("game %d deal seed %d differs from its group's %d", k, res.Seeds[k], res.Seeds[k-k%p])
		}
	}
	// Same deal seed, different bots and seats: the same hands every deal.
	g, _ := env.NewGame(env.Params{Players: p, Deals: 2})
	hands := func(bots []env.Bot) [][][]env.Card {
		s := g.NewInitialState(res.Seeds[0])
		var out [][][]env.Card
		rng := env.NewRNG(9, 9)
		seen := -1
		for !s.IsTerminal() {
			if s.DealIndex() != seen {
				seen = s.DealIndex()
				var h [][]env.Card
				for seat := range p {
					h = append(h, s.Hand(seat))
				}
				out = append(out, h)
			}
			if err := s.ApplyAction(bots[s.CurrentPlayer()].Act(s, &rng)); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	a := hands([]env.Bot{env.HeuristicBot{}, env.RandomBot{}, env.RandomBot{}, env.RandomBot{}})
	b := hands([]env.Bot{env.RandomBot{}, env.RandomBot{}, env.HeuristicBot{}, env.HeuristicBot{}})
	if len(a) != 2 || !reflect.DeepEqual(a, b) {
		t.Fatal("the same deal seed dealt different hands under different play")
	}
}

func TestSummarizeAndRatings(t *testing.T) {
	res := &env.MatchResult{Agents: []string{"a", "b", "b"}, Scores: [][]int{{10, 5, 5}, {10, 10, 4}, {0, 6, 3}, {9, 1, 2}}}
	stats := res.Summarize()
	if len(stats) != 2 || stats[0].Name != "a" || stats[1].Seats != 2 {
		t.Fatalf("Summarize = %+v", stats)
	}
	// a: 10, 10, 0, 9 -> mean 7.25; wins 1, 0.5, 0, 1 -> 0.625.
	if stats[0].Score.Mean != 7.25 || stats[0].Win.Mean != 0.625 {
		t.Fatalf("a's score/win = %v/%v, want 7.25/0.625", stats[0].Score.Mean, stats[0].Win.Mean)
	}
	// b pools its seats per game: (5+5)/2, (10+4)/2, (6+3)/2, (1+2)/2.
	if stats[1].Score.Mean != (5+7+4.5+1.5)/4.0 {
		t.Fatalf("b's score = %v", stats[1].Score.Mean)
	}
	r := res.Ratings()
	if !(r["a"] > r["b"]) || math.Abs((r["a"]+r["b"])/2-1500) > 1e-9 {
		t.Fatalf("Ratings = %v, want a above b around a mean of 1500", r)
	}
}
