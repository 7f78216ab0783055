package card_test

import (
	"math"
	"reflect"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
	"github.com/davidgoliath/dgenv/env/games"
)

// playMatch plays a match of the card game with params through the
// registry's arena (env.PlayMatchOf), as dgeval does.
func playMatch(params card.Params, cfg env.MatchConfig) (*env.MatchResult, error) {
	reg := games.Default()
	typ, err := reg.Lookup(card.GameName)
	if err != nil {
		return nil, err
	}
	given := map[string]any{"players": params.Players}
	if params.Deals != 0 {
		given["deals"] = params.Deals
	}
	g, err := typ.New(given)
	if err != nil {
		return nil, err
	}
	return env.PlayMatchOf(reg, g, cfg)
}

func TestPlayMatchIsReproducibleFromItsSeedWhateverTheWorkers(t *testing.T) {
	params := card.Params{Players: 4, Deals: 2}
	cfg := env.MatchConfig{Agents: []string{"heuristic", "random", "random", "random"}, Games: 40, Seed: 11}
	cfg.Workers = 1
	a, err := playMatch(params, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Workers = 4
	b, err := playMatch(params, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatal("PlayMatch with 1 and 4 workers gave different results")
	}
	cfg.Seed = 12
	c, _ := playMatch(params, cfg)
	if reflect.DeepEqual(a.Scores, c.Scores) {
		t.Fatal("PlayMatch with another seed gave the same scores")
	}
}

// Duplicate deals: each group of Seatings(P) = 2P games replays one deal
// seed in every seating, and the same deal seed really deals the same cards
// whoever sits where and however they play.
func TestDuplicateMatchReplaysTheSameDeals(t *testing.T) {
	const p = 4
	res, err := playMatch(card.Params{Players: p, Deals: 2}, env.MatchConfig{Agents: []string{"heuristic", "random", "heuristic", "random"}, Games: 10, Seed: 5, Duplicate: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Scores) != 16 {
		t.Fatalf("duplicate match of 10 games played %d, want 16 (rounded up to a multiple of %d seatings)", len(res.Scores), 2*p)
	}
	for k := range res.Seeds {
		if res.Seeds[k] != res.Seeds[k-k%(2*p)] {
			t.Fatalf("game %d deal seed %d differs from its group's %d", k, res.Seeds[k], res.Seeds[k-k%(2*p)])
		}
	}
	// Same deal seed, different bots and seats: the same hands every deal.
	g, _ := card.NewGame(card.Params{Players: p, Deals: 2})
	hands := func(bots []card.StateBot) [][][]card.Card {
		s := g.NewInitialState(res.Seeds[0])
		var out [][][]card.Card
		rng := env.NewRNG(9, 9)
		seen := -1
		for !s.IsTerminal() {
			if s.DealIndex() != seen {
				seen = s.DealIndex()
				var h [][]card.Card
				for seat := range p {
					h = append(h, s.Hand(seat))
				}
				out = append(out, h)
			}
			if err := s.ApplyAction(bots[s.CurrentPlayer()].ActState(s, &rng)); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	a := hands([]card.StateBot{card.HeuristicBot{}, card.RandomBot{}, card.RandomBot{}, card.RandomBot{}})
	b := hands([]card.StateBot{card.RandomBot{}, card.RandomBot{}, card.HeuristicBot{}, card.HeuristicBot{}})
	if len(a) != 2 || !reflect.DeepEqual(a, b) {
		t.Fatal("the same deal seed dealt different hands under different play")
	}
}

// The seatings of a match: each a permutation of the seats; over a set,
// every agent sits at every seat equally often and plays right after each
// of its two neighbours in the agents' order equally often (from 3
// players: rotations of the order and of the reversed order).
func TestSeatingsBalanceSeatsAndNeighbours(t *testing.T) {
	for p := 2; p <= 6; p++ {
		ns := env.Seatings(p)
		if want := map[bool]int{true: p, false: 2 * p}[p <= 2]; ns != want {
			t.Fatalf("Seatings(%d) = %d, want %d", p, ns, want)
		}
		atSeat := map[[2]int]int{}  // (agent, seat) -> times
		follows := map[[2]int]int{} // (agent, the agent before it) -> times
		for r := range ns {
			agentAt := make([]int, p)
			seen := map[int]bool{}
			for i := range p {
				s := env.SeatOf(i, r, p)
				if s < 0 || s >= p || seen[s] {
					t.Fatalf("p %d seating %d: agent %d at seat %d (not a permutation)", p, r, i, s)
				}
				seen[s] = true
				agentAt[s] = i
				atSeat[[2]int{i, s}]++
			}
			for s := range p {
				follows[[2]int{agentAt[s], agentAt[(s+p-1)%p]}]++
			}
		}
		for i := range p {
			for s := range p {
				if atSeat[[2]int{i, s}] != ns/p {
					t.Fatalf("p %d: agent %d at seat %d %d times, want %d", p, i, s, atSeat[[2]int{i, s}], ns/p)
				}
			}
			if p < 3 {
				continue
			}
			// Each agent follows its two neighbours of the order (i-1 and i+1)
			// equally often: with rotations alone it would follow i-1 only.
			if a, b := follows[[2]int{i, (i + p - 1) % p}], follows[[2]int{i, (i + 1) % p}]; a != b || a == 0 {
				t.Fatalf("p %d: agent %d follows %d %d times and %d %d times", p, i, (i+p-1)%p, a, (i+1)%p, b)
			}
		}
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
