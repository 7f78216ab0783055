package card_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
	"github.com/davidgoliath/dgenv/env/games"
)

// TestBotsUseOnlyWhatTheSeatKnows: a bot may look only at its own hand and
// the public table, so in every world consistent with the acting seat's
// information (ResampleFromInfostate) it must choose the same card, given
// the same random stream.
func TestBotsUseOnlyWhatTheSeatKnows(t *testing.T) {
	for _, name := range []string{"heuristic", "random"} {
		for players := card.MinPlayers; players <= card.MaxPlayers; players++ {
			t.Run(fmt.Sprintf("%s with %d players chooses the same card in every resampled world", name, players), func(t *testing.T) {
				reg := games.Default()
				typ, _ := reg.Lookup(card.GameName)
				sg, err := typ.New(map[string]any{"players": players, "deals": 2})
				if err != nil {
					t.Fatal(err)
				}
				b, err := reg.NewBot(sg, name)
				if err != nil {
					t.Fatal(err)
				}
				bot := b.(card.StateBot)
				g := newGame(t, card.Params{Players: players, Deals: 2})
				s := g.NewInitialState(uint64(players))
				world := env.NewRNG(uint64(players), 5)
				for step := 0; !s.IsTerminal(); step++ {
					seat := s.CurrentPlayer()
					r0 := env.NewRNG(uint64(step), 1)
					want := bot.ActState(s, &r0)
					if !s.IsLegal(want) {
						t.Fatalf("Step(%d): %s chose illegal %d, legal %v", step, name, want, s.LegalActions())
					}
					if step%3 == 0 {
						for range 3 {
							w := s.ResampleFromInfostate(seat, &world)
							r1 := env.NewRNG(uint64(step), 1)
							if got := bot.ActState(w, &r1); got != want {
								t.Fatalf("Step(%d): %s chose %s in a resampled world, %s in the real one (seat %d)",
									step, name, card.CardString(card.Card(got)), card.CardString(card.Card(want)), seat)
							}
						}
					}
					mustApply(t, s, card.Card(want))
				}
			})
		}
	}
	t.Run("an unknown bot name is an error listing the known ones", func(t *testing.T) {
		reg := games.Default()
		typ, _ := reg.Lookup(card.GameName)
		sg, _ := typ.New(nil)
		if _, err := reg.NewBot(sg, "grandmaster"); err == nil {
			t.Errorf("NewBot(grandmaster) error = nil, want one")
		}
		names := reg.Bots(card.GameName)
		if !slices.Contains(names, "random") || !slices.Contains(names, "heuristic") || !slices.IsSorted(names) {
			t.Errorf("BotNames() = %v, want sorted and including random and heuristic", names)
		}
	})
}

// TestResampleVaries: resampled worlds really differ, and over many samples
// every unseen card lands with every seat allowed to hold it.
func TestResampleVaries(t *testing.T) {
	g := newGame(t, card.Params{Players: 4, Deals: 1})
	s := g.NewInitialState(8)
	rng := env.NewRNG(8, 8)
	for range 9 { // a few tricks in, so some seats may be void
		mustApply(t, s, card.Card(randomAction(&rng, s.LegalActions())))
	}
	me := s.CurrentPlayer()
	where := map[card.Card]map[int]bool{}
	distinct := map[string]bool{}
	for range 400 {
		w := s.ResampleFromInfostate(me, &rng)
		key := ""
		for seat := range 4 {
			if seat == me {
				continue
			}
			for _, c := range w.Hand(seat) {
				if where[c] == nil {
					where[c] = map[int]bool{}
				}
				where[c][seat] = true
			}
			key += fmt.Sprint(w.Hand(seat))
		}
		distinct[key] = true
	}
	if len(distinct) < 350 {
		t.Errorf("400 resamples gave %d distinct worlds, want nearly all distinct", len(distinct))
	}
	for c, seats := range where {
		for seat := range 4 {
			if seat == me || s.Voids(seat)&(1<<card.Colour(c)) != 0 {
				continue
			}
			if !seats[seat] {
				t.Errorf("%s never went to seat %d in 400 resamples", card.CardString(c), seat)
			}
		}
	}
}
