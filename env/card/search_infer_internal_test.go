package card

import (
	"slices"
	"testing"

	"github.com/davidgoliath/dgenv/env"
)

// recordPrior keeps the observation of the seat to act at every call and
// scores the heuristic's card 1, the others 0.
type recordPrior struct{ seen *[][]uint8 }

func (r recordPrior) Scores(s *State, out *[NumActions]float32) {
	*r.seen = append(*r.seen, s.ObservationTensor(s.current()))
	clear(out[:])
	out[HeuristicBot{}.ActState(s, nil)] = 1
}

// midDeal plays a 4-player game with heuristic bots up to the given play of
// its second deal, keeping the observation of every decision of that deal
// where the seat to act had more than one legal card.
func midDeal(t *testing.T, plays int) (*State, []int, [][]uint8) {
	t.Helper()
	g, err := NewGame(Params{Players: 4})
	if err != nil {
		t.Fatal(err)
	}
	s := g.NewInitialState(11)
	var seats []int
	var obs [][]uint8
	for s.DealIndex() < 1 || s.numPlays() < plays {
		if s.DealIndex() == 1 && s.NumLegal() > 1 {
			seats = append(seats, s.current())
			obs = append(obs, s.ObservationTensor(s.current()))
		}
		if err := s.ApplyAction(HeuristicBot{}.ActState(s, nil)); err != nil {
			t.Fatal(err)
		}
	}
	return s, seats, obs
}

// The replay that weighs a world rebuilds, in the true deal, exactly the
// observations the other seats had when they played.
func TestInferReplayRebuildsTheObservations(t *testing.T) {
	s, seats, real := midDeal(t, 23)
	me := s.current()
	var want [][]uint8
	for i, seat := range seats {
		if seat != me {
			want = append(want, real[i])
		}
	}
	var seen [][]uint8
	b := SearchBot{Infer: recordPrior{&seen}, InferTemp: 0.01}
	var sc [NumActions]float32
	if ll := b.logLikelihood(s, me, &sc, &[MaxPlayers]seatKind{}); ll < -1e-9 {
		t.Errorf("heuristic players under the heuristic's prior at temperature 0.01: log-likelihood %v, want 0", ll)
	}
	if len(seen) != len(want) || len(want) < 5 {
		t.Fatalf("%d observations rebuilt, want %d (at least 5)", len(seen), len(want))
	}
	for i := range want {
		if !slices.Equal(seen[i], want[i]) {
			t.Fatalf("rebuilt observation %d differs from the one its seat had", i)
		}
	}
}

// Worlds in which the others' plays are unlikely weigh less: with the
// heuristic playing and the heuristic as the model, no resampled world is
// likelier than the true one, and some are less likely.
func TestInferWeighsWorldsByThePlays(t *testing.T) {
	s, _, _ := midDeal(t, 30)
	me := s.current()
	var seen [][]uint8
	b := SearchBot{Infer: recordPrior{&seen}, InferTemp: 0.2, InferEps: 0.05}
	var sc [NumActions]float32
	truth := b.logLikelihood(s, me, &sc, &[MaxPlayers]seatKind{})
	rng := NewRNG(3, 4)
	lower := 0
	for range 40 {
		w := s.ResampleFromInfostate(me, &rng)
		ll := b.logLikelihood(w, me, &sc, &[MaxPlayers]seatKind{})
		if ll > truth+1e-9 {
			t.Fatalf("a resampled world has log-likelihood %v above the true deal's %v", ll, truth)
		}
		if ll < truth-1 {
			lower++
		}
	}
	if lower == 0 {
		t.Fatal("no resampled world was less likely than the true deal")
	}
}

// With Infer, ModelSeats or SelfRollout set the search still plays legal,
// reproducible games on several goroutines, with and without a pool.
func TestInferSearchPlays(t *testing.T) {
	for _, bot := range []SearchBot{
		{Worlds: 3, Workers: 2, Infer: heurScores{}, InferEps: 0.1},
		{Worlds: 3, Workers: 2, ModelSeats: true, InferPool: 12},
		{Worlds: 3, Workers: 2, Infer: heurScores{}, ModelSeats: true, InferPool: 12, SelfRollout: RandomBot{}},
	} {
		g, _ := NewGame(Params{Players: 3, Deals: 2})
		s1, s2 := g.NewInitialState(5), g.NewInitialState(5)
		r1, r2 := NewRNG(1, 1), NewRNG(1, 1)
		bots := []StateBot{bot, HeuristicBot{}, RandomBot{}}
		for !s1.IsTerminal() {
			a1, a2 := bots[s1.current()].ActState(s1, &r1), bots[s2.current()].ActState(s2, &r2)
			if a1 != a2 {
				t.Fatalf("%+v: same state and seed chose %d and %d", bot, a1, a2)
			}
			if err := s1.ApplyAction(a1); err != nil {
				t.Fatal(err)
			}
			_ = s2.ApplyAction(a2)
		}
	}
}

// ModelSeats recognises the heuristic seats once a deal is over, and only
// them: not before, not a random seat, never the acting one.
func TestModelSeatsRecognisesTheHeuristic(t *testing.T) {
	g, _ := NewGame(Params{Players: 4})
	s := g.NewInitialState(9)
	bots := []StateBot{HeuristicBot{}, RandomBot{}, HeuristicBot{}, RandomBot{}}
	rng := NewRNG(1, 1)
	b := SearchBot{ModelSeats: true}
	checked := [2]bool{}
	for !s.IsTerminal() && s.DealIndex() < 2 {
		if d := s.DealIndex(); !checked[d] && s.TricksDone() == 2 {
			checked[d] = true
			want := [MaxPlayers]seatKind{}
			if d == 1 {
				want[0] = kindHeuristic
			}
			if got := b.seatKinds(s, 2); got != want {
				t.Errorf("deal %d: seats %v, want %v", d, got, want)
			}
			if d == 1 {
				want[2], want[0] = kindHeuristic, kindUnknown
				if got := b.seatKinds(s, 0); got != want {
					t.Errorf("deal %d seen by seat 0: seats %v, want %v", d, got, want)
				}
			}
		}
		_ = s.ApplyAction(bots[s.current()].ActState(s, &rng))
	}
	if !checked[1] {
		t.Fatal("the second deal was not reached")
	}
}

// seatLog records which seats a rollout bot played (one goroutine).
type seatLog struct {
	seats *[MaxPlayers]int
	bot   StateBot
}

// Act implements env.Bot.
func (b seatLog) Act(s env.State, rng *RNG) int { return b.ActState(stateOf(s), rng) }

func (l seatLog) ActState(s *State, rng *RNG) Action {
	l.seats[s.current()]++
	return l.bot.ActState(s, rng)
}

// SelfRollout plays the acting seat's cards in the rollouts, Rollout the
// others'.
func TestSelfRolloutPlaysTheActingSeat(t *testing.T) {
	s, _, _ := midDeal(t, 21)
	me := s.current()
	var self, other [MaxPlayers]int
	b := SearchBot{Worlds: 4, Workers: 1, Rollout: seatLog{&other, HeuristicBot{}}, SelfRollout: seatLog{&self, RandomBot{}}}
	rng := NewRNG(1, 2)
	b.ActState(s, &rng)
	for seat := range 4 {
		if (seat == me) != (self[seat] > 0) || (seat == me) != (other[seat] == 0) {
			t.Fatalf("acting seat %d: the self rollout played %v, the other %v", me, self, other)
		}
	}
}

// heurScores is recordPrior without the recording (safe on several goroutines).
type heurScores struct{}

func (heurScores) Scores(s *State, out *[NumActions]float32) {
	clear(out[:])
	out[HeuristicBot{}.ActState(s, nil)] = 1
}
