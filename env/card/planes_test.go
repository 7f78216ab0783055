package card_test

import (
	"bytes"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
)

// The engine encodes from byte planes it keeps in step with the bit sets;
// the reference encoder reads the bit sets. They must agree everywhere, for
// every observer, including after resampling.
func TestEncodePlanesMatchesReferenceEncoder(t *testing.T) {
	for p := card.MinPlayers; p <= card.MaxPlayers; p++ {
		g, err := card.NewGame(card.Params{Players: p, Deals: 2})
		if err != nil {
			t.Fatal(err)
		}
		l := g.ObservationLayout()
		rng := env.NewRNG(uint64(p), 7)
		ref := make([]uint8, l.Size)
		for game := range 3 {
			s := g.NewInitialState(uint64(game))
			for step := 0; !s.IsTerminal(); step++ {
				check := s
				if step%11 == 3 {
					check = s.ResampleFromInfostate(s.CurrentPlayer(), &rng)
				}
				for seat := range p {
					l.Encode(ref, check.Board(), seat)
					if got := check.ObservationTensor(seat); !bytes.Equal(got, ref) {
						t.Fatalf("players %d game %d step %d seat %d: plane encoding differs from reference", p, game, step, seat)
					}
				}
				legal := s.LegalActions()
				if err := s.ApplyAction(legal[rng.IntN(len(legal))]); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}
