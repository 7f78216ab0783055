package card_test

// Fuzz tests (STYLE.md habit 8): a byte stream becomes a game and a move
// sequence; arbitrary text goes to DeserializeState. `go test` runs the seed
// corpora; `go test -fuzz FuzzPlay ./env/` explores.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
)

// FuzzPlay: byte 0 picks players, byte 1 deals, byte 2 the first dealer,
// byte 3 the seed; every later byte picks an action. A byte >= 0xF0 first
// tries an action that is not legal, which must be refused without change.
func FuzzPlay(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1})
	f.Add([]byte{1, 1, 3, 2, 5, 0xF1, 7, 9, 0xFF, 0xFE, 3})
	f.Add([]byte{3, 0, 5, 9, 200, 100, 0xF0, 0xF5, 0xFA, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	f.Add([]byte("a whole game of plain text drives the moves too, with some \xff\xfe illegal tries"))
	long := make([]byte, 700)
	for i := range long {
		long[i] = byte(i * 37)
	}
	f.Add(long)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 4 {
			return
		}
		players := card.MinPlayers + int(data[0])%4
		params := card.Params{Players: players, Deals: 1 + int(data[1])%2, FirstDealer: int(data[2]) % players}
		g := newGame(t, params)
		s := g.NewInitialState(uint64(data[3]))
		before := takeSnap(s)
		for i, b := range data[4:] {
			if s.IsTerminal() {
				break
			}
			legal := checkLegal(t, s, &before)
			if b >= 0xF0 {
				bad := []int{-1, card.NumActions, int(b) * 1000}
				for a := range card.NumActions {
					if !s.IsLegal(a) {
						bad = append(bad, a)
					}
				}
				a := bad[int(b-0xF0)*7%len(bad)]
				text := s.Serialize()
				err := s.ApplyAction(a)
				var ie *card.IllegalActionError
				if !errors.Is(err, card.ErrIllegalAction) || !errors.As(err, &ie) || ie.Action != a {
					t.Fatalf("byte %d: ApplyAction(%d) of an illegal action: error = %v, want an *IllegalActionError", i, a, err)
				}
				if s.Serialize() != text {
					t.Fatalf("byte %d: a refused action changed the state", i)
				}
			}
			a := legal[int(b)%len(legal)]
			mustApply(t, s, card.Card(a))
			after := takeSnap(s)
			checkStep(t, params, &before, a, &after, s.Rewards())
			checkConserved(t, &after)
			before = after
		}
		text := s.Serialize()
		d, err := g.DeserializeState(text)
		if err != nil || d.Serialize() != text {
			t.Fatalf("DeserializeState(Serialize()) = %v; round trip equal %v", err, err == nil && d.Serialize() == text)
		}
	})
}

// fuzzGame reads the params line of a serialized state to pick the game.
func fuzzGame(text string) *card.Game {
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "params") {
			continue
		}
		var p card.Params
		if n, _ := fmt.Sscanf(line, "params %d %d %d", &p.Players, &p.Deals, &p.FirstDealer); n != 3 {
			return nil
		}
		if p.Deals > 8 { // keep each input cheap to play out
			return nil
		}
		g, err := card.NewGame(p)
		if err != nil {
			return nil
		}
		return g
	}
	return nil
}

// FuzzDeserialize: no text makes DeserializeState panic or hang; text it
// accepts gives a state that round-trips and plays on legally to the end.
func FuzzDeserialize(f *testing.F) {
	for _, p := range []card.Params{{Players: 3, Deals: 1}, {Players: 4, Deals: 2, FirstDealer: 1}, {Players: 5, Deals: 2}, {Players: 6, Deals: 1, FirstDealer: 5}} {
		g, _ := card.NewGame(p)
		s := g.NewInitialState(uint64(p.Players))
		rng := env.NewRNG(1, 1)
		f.Add(s.Serialize())
		for step := 0; !s.IsTerminal(); step++ {
			mustApply(f, s, card.Card(randomAction(&rng, s.LegalActions())))
			if step == 7 || step == 15*p.Players || step == 15*p.Players+3 {
				f.Add(s.Serialize())
			}
		}
		f.Add(s.Serialize())
		hands := craftDeal(f, p.Players, nil, nil)
		pending, _ := g.NewStateFromDeals(3, hands, hands)
		if pending != nil {
			f.Add(pending.Serialize())
		}
	}
	f.Add("")
	f.Add("david-goliath v1\nparams 4 4 0\nrng 0 0 0 0\n")
	f.Add("david-goliath v1\nparams 3 1 0\nrng 1 2 3 4\ndeal 0 1 2\nplays\n")
	f.Fuzz(func(t *testing.T, text string) {
		g := fuzzGame(text)
		if g == nil {
			g = newGame(t, card.Params{Players: 4})
		}
		s, err := g.DeserializeState(text)
		if err != nil {
			if !errors.Is(err, card.ErrBadSerialization) {
				t.Fatalf("DeserializeState error = %v, want one wrapping ErrBadSerialization", err)
			}
			return
		}
		norm := s.Serialize()
		d, err := g.DeserializeState(norm)
		if err != nil {
			t.Fatalf("DeserializeState(Serialize()) of an accepted state: error = %v\n%s", err, norm)
		}
		if d.Serialize() != norm || d.String() != s.String() {
			t.Fatalf("an accepted state does not round-trip:\n%s\nwant\n%s", d.Serialize(), norm)
		}
		rng := env.NewRNG(2, 2)
		conformancePlayout(t, s, &rng, 0)
	})
}

func TestDeserializeRefuses(t *testing.T) {
	g := newGame(t, card.Params{Players: 4, Deals: 2})
	s := g.NewInitialState(5)
	rng := env.NewRNG(5, 5)
	for range 50 {
		mustApply(t, s, card.Card(randomAction(&rng, s.LegalActions())))
	}
	good := s.Serialize()
	lines := strings.Split(strings.TrimSpace(good), "\n")
	edit := func(i int, line string) string {
		l := append([]string(nil), lines...)
		l[i] = line
		return strings.Join(l, "\n")
	}
	plays := strings.Fields(lines[4])
	tests := []struct{ name, text string }{
		{"an empty text", ""},
		{"a wrong header", edit(0, "david-goliath v2")},
		{"another game's parameters", edit(1, "params 4 3 0")},
		{"an all-zero rng, which would never shuffle again", edit(2, "rng 0 0 0 0")},
		{"an rng with three words", edit(2, "rng 1 2 3")},
		{"a card id out of range", edit(3, strings.Replace(lines[3], "deal ", "deal 90 ", 1))},
		{"a hand with a card twice", edit(3, "deal "+strings.Repeat("0 ", 60))},
		{"an illegal play", edit(4, "plays "+strings.Join(append([]string{plays[1], plays[1]}, plays[2:]...), " "))},
		{"a play of a card nobody holds any more", edit(4, strings.Join(append(plays, plays[1]), " "))},
		{"a missing plays line", strings.Join(lines[:4], "\n")},
		{"more deals than the game has", good + lines[3] + "\nplays\n" + lines[3] + "\nplays\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			if _, err := g.DeserializeState(tc.text); !errors.Is(err, card.ErrBadSerialization) {
				t.Errorf("DeserializeState error = %v, want ErrBadSerialization", err)
			}
		})
	}
	t.Run("the unedited text is accepted", func(t *testing.T) {
		if d, err := g.DeserializeState(good); err != nil || d.Serialize() != good {
			t.Fatalf("DeserializeState(good) error = %v", err)
		}
	})
	t.Run("explicit deals not yet reached survive a round trip", func(t *testing.T) {
		h0, h1 := craftDeal(t, 4, nil, nil), craftDeal(t, 4, map[int][]card.Card{0: cards(t, "red 1")}, nil)
		s, err := g.NewStateFromDeals(1, h0, h1)
		if err != nil {
			t.Fatal(err)
		}
		text := s.Serialize()
		d, err := g.DeserializeState(text)
		if err != nil || d.Serialize() != text {
			t.Fatalf("round trip with a pending deal: %v", err)
		}
		for range 60 {
			a := s.LegalActions()[0]
			mustApply(t, s, card.Card(a))
			mustApply(t, d, card.Card(a))
		}
		if !slices.Equal(s.Hand(0), d.Hand(0)) || !slices.Contains(s.Hand(0), parseCard(t, "red 1")) {
			t.Errorf("second deal hand = %v, want the explicit deal's (with red 1)", names(d.Hand(0)))
		}
	})
}
