package policy_test

import (
	"os"
	"strings"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/env/policy"
)

// The prior a guided search reads is the policy's logits of the acting
// seat's observation.
func TestPriorScoresAreTheLogits(t *testing.T) {
	model, _, _ := readParity(t)
	p, err := policy.Parse(games.Default(), "parity", model)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := card.NewGame(card.Params{Players: 4})
	s := g.NewInitialState(3)
	for range 6 {
		_ = s.ApplyAction(s.LegalActions()[0])
	}
	var got [card.NumActions]float32
	policy.Prior{Policy: p}.Scores(s, &got)
	want := make([]float32, card.NumActions)
	if err := p.Logits(s.ObservationTensor(s.CurrentPlayer()), 1, want); err != nil {
		t.Fatal(err)
	}
	for a := range want {
		if got[a] != want[a] {
			t.Fatalf("prior[%d] = %v, logits %v", a, got[a], want[a])
		}
	}
}

// Bots make "search:policy:<name>": a search bot guided by the policy,
// playing legal games of the policy's player count only.
func TestGuidedSearchIsRegisteredAndPlays(t *testing.T) {
	model, _, _ := readParity(t)
	p, err := policy.Parse(games.Default(), "guidetest", model)
	if err != nil {
		t.Fatal(err)
	}
	reg := games.Default()
	require := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	require(policy.Register(reg, map[string]*policy.Policy{"guidetest": p}))
	typ, _ := reg.Lookup(card.GameName)
	cg, err := typ.New(map[string]any{"players": 4, "deals": 1})
	require(err)
	bot, err := reg.NewBot(cg, "search:policy:guidetest")
	if err != nil {
		t.Fatal("no bot search:policy:guidetest:", err)
	}
	gd, ok := bot.(policy.Guided)
	if !ok || gd.Prior == nil || gd.PriorWeight != policy.GuidedWeight*p.Meta().LogitScale {
		t.Fatalf("search:policy:guidetest is %T %+v, want a Guided search with the policy as prior", bot, bot)
	}
	gd.Worlds, gd.FocusWorlds = 2, 2 // keep the test short
	require(reg.RegisterBot(card.GameName, "search:policy:guidetest", card.Factory(gd)))
	res, err := env.PlayMatchOf(reg, cg, env.MatchConfig{
		Agents: []string{"search:policy:guidetest", "heuristic", "random", "heuristic"}, Games: 2, Seed: 1,
	})
	if err != nil || len(res.Scores) != 2 {
		t.Fatalf("PlayMatch = %v, %v", res, err)
	}
	require(policy.Register(reg, map[string]*policy.Policy{"guidetest3": p}))
	g3, _ := typ.New(map[string]any{"players": 3})
	if _, err := reg.NewBot(g3, "search:policy:guidetest3"); err == nil {
		t.Fatal("a 4-player policy's guided search accepted a 3-player game")
	}
	g, _ := card.NewGame(card.Params{Players: 4, Deals: 1})
	s := g.NewInitialState(5)
	rng := env.NewRNG(1, 2)
	for !s.IsTerminal() {
		if err := s.ApplyAction(gd.ActState(s, &rng)); err != nil {
			t.Fatal(err)
		}
	}
}

// gameStates are the states of the decisions with more than one legal card
// in four 4-player games played by the heuristic: a decision mix like a
// real game's (long first tricks, short last ones).
func gameStates(b *testing.B, players int) []*card.State {
	g, _ := card.NewGame(card.Params{Players: players})
	var out []*card.State
	rng := env.NewRNG(1, 1)
	for seed := range uint64(4) {
		s := g.NewInitialState(seed)
		for !s.IsTerminal() {
			if s.NumLegal() > 1 {
				out = append(out, s.Clone())
			}
			if err := s.ApplyAction(card.HeuristicBot{}.ActState(s, &rng)); err != nil {
				b.Fatal(err)
			}
		}
	}
	return out
}

// benchDecisions is the mean time of one decision over a 4-player game's
// mix, on one goroutine (the search bots' Workers = 1).
func benchDecisions(b *testing.B, bot card.StateBot) { benchDecisionsAt(b, bot, 4) }

// benchDecisionsAt is benchDecisions at another player count.
func benchDecisionsAt(b *testing.B, bot card.StateBot, players int) {
	states := gameStates(b, players)
	rng := env.NewRNG(2, 2)
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		bot.ActState(states[i%len(states)], &rng)
		i++
	}
}

// Strongest is the committed policy whose guided search make run serves as
// its default opponent (the Makefile's OPPONENT, TestMakeRunOpponentIsStrongest):
// search:policy:expert, ahead of search:policy:imitate-search head to head
// (docs/training.md). Imitation is the imitation network it replaced, which
// the benchmarks of the bare network and of the search variants measure.
const (
	Strongest = "expert"
	Imitation = "imitate-search"
)

func committed(b *testing.B, name string) *policy.Policy {
	ps, err := policy.LoadFS(games.Default(), os.DirFS("../../policies"), nil)
	if err != nil {
		b.Fatal(err)
	}
	p := ps[name]
	if p == nil {
		b.Fatalf("policies/%s.onnx is not committed", name)
	}
	return p
}

// The committed imitation policy, the plain search bot and the search it
// guides, one decision each, averaged over a game's decisions (one core).
func BenchmarkDecisionPolicy(b *testing.B) {
	benchDecisions(b, policy.Bot{Policy: committed(b, Imitation), Greedy: true})
}

func BenchmarkDecisionSearch(b *testing.B) {
	benchDecisions(b, card.SearchBot{Workers: 1})
}

func BenchmarkDecisionGuidedSearch(b *testing.B) {
	g := policy.NewGuided(committed(b, Strongest))
	g.Workers = 1
	benchDecisions(b, g)
}

// The search variants of docs/training.md's "What the search computes"
// (none stronger than plain search): worlds weighted by the network's
// likelihood of the others' plays, the heuristic seats recognised and
// their plays weighing a pool of 256 worlds, and the network playing the
// searching seat's own cards in the rollouts.
func BenchmarkDecisionInferSearch(b *testing.B) {
	p := committed(b, Imitation)
	benchDecisions(b, card.SearchBot{Workers: 1, Infer: policy.Prior{Policy: p}, InferEps: 0.1})
}

func BenchmarkDecisionModelSeatsSearch(b *testing.B) {
	benchDecisions(b, card.SearchBot{Workers: 1, ModelSeats: true, InferPool: 256})
}

func BenchmarkDecisionSelfRolloutSearch(b *testing.B) {
	p := committed(b, Imitation)
	benchDecisions(b, card.SearchBot{Workers: 1, SelfRollout: policy.Bot{Policy: p, Greedy: true}})
}

// make run's default opponent (the Makefile's OPPONENT) is the guided search
// of Strongest, and the committed policies register it for the 4-player
// game, so the server started by make run accepts it.
func TestMakeRunOpponentIsStrongest(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	var opponent string
	for line := range strings.Lines(string(mk)) {
		if v, ok := strings.CutPrefix(line, "OPPONENT ?="); ok {
			opponent = strings.TrimSpace(v)
		}
	}
	if want := "search:policy:" + Strongest; opponent != want {
		t.Fatalf("Makefile: OPPONENT ?= %q, want %q (Strongest, docs/training.md)", opponent, want)
	}
	reg, g, _ := registeredCommitted(t, 4)
	bot, err := reg.NewBot(g, opponent)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := bot.(policy.Guided); !ok {
		t.Fatalf("%s is a %T, want the guided search", opponent, bot)
	}
}
