package card_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
	"github.com/davidgoliath/dgenv/env/envtest"
)

// chanceGame is the card game of players and deals as an env.ChanceGame.
func chanceGame(t *testing.T, players, deals, firstDealer int) env.ChanceGame {
	t.Helper()
	g, err := card.SpielType().New(map[string]any{"players": players, "deals": deals, "first_dealer": firstDealer})
	if err != nil {
		t.Fatal(err)
	}
	cg, ok := g.(env.ChanceGame)
	if !ok {
		t.Fatalf("%T does not implement env.ChanceGame", g)
	}
	return cg
}

func TestTheCardGamesChanceStatesKeepTheContract(t *testing.T) {
	for p := card.MinPlayers; p <= card.MaxPlayers; p++ {
		t.Run(fmt.Sprintf("%d players", p), func(t *testing.T) {
			envtest.ChanceConformance(t, chanceGame(t, p, 2, p-1), 2, 11)
		})
	}
}

func TestChanceStateSizesAndNames(t *testing.T) {
	g := chanceGame(t, 4, 1, 0)
	info := g.ChanceInfo()
	obs := g.Observation().Size
	if info.ObservationTensorSize != obs || info.InformationStateTensorSize != obs+card.NumActions*(card.TricksPerDeal+4) {
		t.Errorf("tensor sizes %d, %d; want %d, %d", info.ObservationTensorSize, info.InformationStateTensorSize, obs, obs+90*19)
	}
	if info.MaxChanceOutcomes != card.NumActions || info.MaxChanceNodes != 4*card.TricksPerDeal {
		t.Errorf("ChanceInfo %+v: want 90 outcomes and 60 chance nodes", info)
	}
	s := g.NewChanceState()
	if s.CurrentPlayer() != env.ChancePlayer || s.ChanceRun() != 60 || len(s.AppendChanceOutcomes(nil)) != 60 {
		t.Errorf("the first node: player %d, run %d: want a chance node dealing 60 cards", s.CurrentPlayer(), s.ChanceRun())
	}
	if got := s.ActionString(env.ChancePlayer, 44); got != "deal green 9" {
		t.Errorf("ActionString(chance, 44) = %q, want \"deal green 9\"", got)
	}
	if got := s.ActionString(0, 89); got != "purple 18" {
		t.Errorf("ActionString(0, 89) = %q, want \"purple 18\"", got)
	}
	if !strings.HasPrefix(s.Serialize(), "david-goliath-spiel v1\nparams 4 1 0\n") {
		t.Errorf("Serialize() = %q", s.Serialize())
	}
}
