package card_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
)

// panicBot plays like RandomBot until its calls (shared by every copy)
// reach after, then panics in whichever goroutine calls it.
type panicBot struct {
	calls *atomic.Int64
	after int64
}

// Act implements env.Bot.
func (b panicBot) Act(s env.State, rng *env.RNG) int { return b.ActState(s.(*card.SpielState).S, rng) }

func (b panicBot) ActState(s *card.State, rng *env.RNG) card.Action {
	if b.calls.Add(1) > b.after {
		panic("bot exploded")
	}
	return card.RandomBot{}.ActState(s, rng)
}

// TestPanicInAWorkerBreaksOnlyTheVecEnv: a bot that panics in a worker
// goroutine (or the caller's) must not end the process: Step returns a
// *PanicError naming it, Err reports it, and the VecEnv refuses to go on.
func TestPanicInAWorkerBreaksOnlyTheVecEnv(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after int64 // bot calls before the panic
		n     int
	}{
		{"in a worker goroutine during a step", 2000, 512},
		{"in the caller's goroutine", 10, 1},
		{"during the first reset", 0, 512},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			name := "test-panic-" + tc.name
			v, err := newVecEnv(vecConfig{Params: card.DefaultParams(), NumEnvs: tc.n, Seed: 1,
				LearnerSeats: []int{0}, Opponent: name, Bot: panicBot{calls: &calls, after: tc.after}, Workers: 4})
			if tc.after == 0 {
				var pe *env.PanicError
				if !errors.As(err, &pe) || v != nil {
					t.Fatalf("NewVecEnv = %v, %v; want nil, a *PanicError", v, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()
			acts := make([]int32, tc.n)
			var stepErr error
			for range 200 {
				for i := range tc.n {
					for a := range card.NumActions {
						if v.Mask()[i*card.NumActions+a] == 1 {
							acts[i] = int32(a)
							break
						}
					}
				}
				if stepErr = v.Step(acts); stepErr != nil {
					break
				}
			}
			var pe *env.PanicError
			if !errors.As(stepErr, &pe) || pe.Value != "bot exploded" || !strings.Contains(string(pe.Stack), "panicBot") {
				t.Fatalf("Step error = %v, want a *PanicError from the bot with its stack", stepErr)
			}
			if v.Err() != stepErr {
				t.Errorf("Err() = %v, want the step's error", v.Err())
			}
			if err := v.Step(acts); err != stepErr {
				t.Errorf("Step after the panic = %v, want the same error", err)
			}
			v.ResetContinue() // does nothing, and must not hang or panic
			if v.Err() != stepErr {
				t.Errorf("Err() after a reset = %v", v.Err())
			}
		})
	}
}

// TestPanicInSearchRolloutReachesTheCaller: a panic in one of the search
// bot's goroutines is passed on to the goroutine that called Act.
func TestPanicInSearchRolloutReachesTheCaller(t *testing.T) {
	var calls atomic.Int64
	bot := card.SearchBot{Worlds: 8, Workers: 4, Rollout: panicBot{calls: &calls, after: 50}}
	g := newGame(t, card.DefaultParams())
	s := g.NewInitialState(3)
	var got any
	func() {
		defer func() { got = recover() }()
		rng := env.NewRNG(1, 2)
		for range 200 {
			if err := s.ApplyAction(bot.ActState(s, &rng)); err != nil {
				t.Fatal(err)
			}
		}
	}()
	pe, ok := got.(*env.PanicError)
	if !ok || pe.Value != "bot exploded" {
		t.Fatalf("recovered %v, want the rollout's *PanicError", got)
	}
}
