package card_test

import (
	"fmt"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
)

// pickLegal fills actions with a uniformly random legal action per env, read
// from the mask buffer (what a client does).
func pickLegal(mask []uint8, actions []int32, rng *env.RNG) {
	for i := range actions {
		row := mask[i*card.NumActions : (i+1)*card.NumActions]
		var legal [card.HandSize]int32
		n := 0
		for a, m := range row {
			if m != 0 {
				legal[n] = int32(a)
				n++
			}
		}
		actions[i] = legal[rng.IntN(n)]
	}
}

// BenchmarkStateStep is one ApplyAction on a single State (random legal play,
// a new game started whenever one ends).
func BenchmarkStateStep(b *testing.B) {
	for p := card.MinPlayers; p <= card.MaxPlayers; p++ {
		b.Run(fmt.Sprintf("players=%d", p), func(b *testing.B) {
			g, err := card.NewGame(card.Params{Players: p})
			if err != nil {
				b.Fatal(err)
			}
			s := g.NewInitialState(1)
			rng := env.NewRNG(1, 1)
			legal := make([]card.Action, 0, card.HandSize)
			b.ReportAllocs()
			for b.Loop() {
				if s.IsTerminal() {
					b.StopTimer()
					s = g.NewInitialState(rng.Uint64())
					b.StartTimer()
				}
				legal = s.AppendLegalActions(legal[:0])
				if err := s.ApplyAction(legal[rng.IntN(len(legal))]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkVecStep is the vectorised step with observation and mask encoding
// at N=4096 on all cores, self-play, 3..6 players. Choosing the actions from
// the masks is outside the timer; ns/op is per batch, env-steps/s is reported.
func BenchmarkVecStep(b *testing.B) {
	const n = 4096
	for p := card.MinPlayers; p <= card.MaxPlayers; p++ {
		b.Run(fmt.Sprintf("players=%d", p), func(b *testing.B) {
			benchVec(b, vecConfig{Params: card.Params{Players: p}, NumEnvs: n, Seed: 1})
		})
	}
	b.Run("players=4/learner=0/opponent=heuristic", func(b *testing.B) {
		benchVec(b, vecConfig{Params: card.Params{Players: 4}, NumEnvs: n, Seed: 1, LearnerSeats: []int{0}, Opponent: "heuristic"})
	})
	b.Run("players=4/learner=0/opponent=random", func(b *testing.B) {
		benchVec(b, vecConfig{Params: card.Params{Players: 4}, NumEnvs: n, Seed: 1, LearnerSeats: []int{0}, Opponent: "random"})
	})
	b.Run("players=4/learner=0/opponents=heuristic,random,heuristic", func(b *testing.B) {
		benchVec(b, vecConfig{Params: card.Params{Players: 4}, NumEnvs: n, Seed: 1, Opponents: []string{"", "heuristic", "random", "heuristic"}})
	})
}

func benchVec(b *testing.B, cfg vecConfig) {
	v, err := newVecEnv(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	rng := env.NewRNG(2, 2)
	actions := make([]int32, cfg.NumEnvs)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		pickLegal(v.Mask(), actions, &rng)
		b.StartTimer()
		if err := v.Step(actions); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*float64(cfg.NumEnvs)/b.Elapsed().Seconds(), "env-steps/s")
}

// BenchmarkVecStepSmall is the self-play step at N=64 (everything in cache).
func BenchmarkVecStepSmall(b *testing.B) {
	benchVec(b, vecConfig{Params: card.Params{Players: 4}, NumEnvs: 64, Seed: 1, Workers: 1})
}

// BenchmarkSearchBotMove is one decision of the search bot (32 worlds, all
// cores) at the first trick of a four-player deal, when it has the most
// cards to consider.
func BenchmarkSearchBotMove(b *testing.B) {
	g, err := card.NewGame(card.Params{Players: 4})
	if err != nil {
		b.Fatal(err)
	}
	bot := card.SearchBot{}
	rng := env.NewRNG(1, 1)
	seed := uint64(0)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		seed++
		s := g.NewInitialState(seed)
		b.StartTimer()
		bot.ActState(s, &rng)
	}
}
