package duel_test

import (
	"fmt"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/duel"
)

// A heuristic Goliath against a random David, with a mask and an
// observation written into reused buffers as a learner would read them.
func Example() {
	g, err := duel.NewGame(duel.Params{MaxRounds: 100})
	if err != nil {
		panic(err)
	}
	s := g.NewInitialState(7)
	rng := env.NewRNG(7, 1)
	bots := [2]interface {
		ActState(*duel.State, *env.RNG) duel.Action
	}{duel.HeuristicBot{}, duel.RandomBot{}}
	mask := make([]uint8, g.NumDistinctActions())
	obs := make([]uint8, g.ObservationTensorShape()[0])
	for !s.IsTerminal() {
		p := s.CurrentPlayer()
		s.WriteMask(mask)
		s.WriteObservation(obs, p)
		if err := s.ApplyAction(bots[p].ActState(s, &rng)); err != nil {
			panic(err)
		}
	}
	fmt.Println("winner:", duel.SeatName(s.Winner()), "returns:", s.Returns())
	again, err := g.DeserializeState(s.Serialize())
	fmt.Println("round trip:", err == nil && again.Equal(s))
	// Output:
	// winner: Goliath returns: [1 -1]
	// round trip: true
}
