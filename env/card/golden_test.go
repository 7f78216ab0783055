package card_test

// Golden playthroughs (STYLE.md habit 7, OpenSpiel's playthrough files):
// whole games pinned as text under testdata/. A change in the rules, the
// shuffle or State.String shows up as a diff to review; regenerate with
//
//	go test ./env/card -run TestGolden -update

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var goldenGames = []struct {
	file   string
	params card.Params
	seed   uint64
}{
	{"playthrough_3p.txt", card.Params{Players: 3, Deals: 1}, 1},
	{"playthrough_4p_2deals.txt", card.Params{Players: 4, Deals: 2, FirstDealer: 3}, 2},
	{"playthrough_5p.txt", card.Params{Players: 5, Deals: 1, FirstDealer: 2}, 3},
	{"playthrough_6p.txt", card.Params{Players: 6, Deals: 1, FirstDealer: 5}, 4},
}

// playthrough plays a seeded game with seeded uniform random actions and
// writes it down: the state after every action, the action, the legal
// actions it was chosen from, and the rewards.
func playthrough(tb testing.TB, params card.Params, seed uint64) string {
	tb.Helper()
	g := newGame(tb, params)
	s := g.NewInitialState(seed)
	rng := env.NewRNG(seed, 1000)
	var sb strings.Builder
	p := g.Params()
	fmt.Fprintf(&sb, "# David & Goliath playthrough. Regenerate: go test ./env/card -run TestGolden -update\n")
	fmt.Fprintf(&sb, "# game: players=%d deals=%d first_dealer=%d; NewInitialState(%d); actions uniform over LegalActions() from NewRNG(%d, 1000)\n\n",
		p.Players, p.Deals, p.FirstDealer, seed, seed)
	fmt.Fprintf(&sb, "initial state:\n%s\n", s)
	for n := 1; !s.IsTerminal(); n++ {
		legal := s.LegalActions()
		a := randomAction(&rng, legal)
		player := s.CurrentPlayer()
		mustApply(tb, s, card.Card(a))
		fmt.Fprintf(&sb, "action %d: seat %d plays %s (%d) from %v\n", n, player, s.ActionString(player, a), a, legal)
		fmt.Fprintf(&sb, "rewards %v returns %v\n", s.Rewards(), s.Returns())
		sb.WriteString(s.String())
		sb.WriteString("\n")
	}
	fmt.Fprintf(&sb, "terminal: CurrentPlayer %d, totals %v, winners %v\n", s.CurrentPlayer(), s.Totals(), s.Winners())
	fmt.Fprintf(&sb, "serialized:\n%s", s.Serialize())
	return sb.String()
}

func TestGolden(t *testing.T) {
	for _, gg := range goldenGames {
		t.Run(gg.file+" is unchanged", func(t *testing.T) {
			got := playthrough(t, gg.params, gg.seed)
			path := filepath.Join("testdata", gg.file)
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			wantB, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./env/card -run TestGolden -update)", err)
			}
			want := string(wantB)
			if got == want {
				return
			}
			gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
			for i := range min(len(gl), len(wl)) {
				if gl[i] != wl[i] {
					t.Fatalf("%s line %d:\n got  %q\n want %q\n(review, then regenerate with -update if the change is intended)", path, i+1, gl[i], wl[i])
				}
			}
			t.Fatalf("%s: %d lines, want %d", path, len(gl), len(wl))
		})
	}
	t.Run("a golden game replays from its serialized form", func(t *testing.T) {
		gg := goldenGames[1]
		text := playthrough(t, gg.params, gg.seed)
		_, ser, ok := strings.Cut(text, "serialized:\n")
		if !ok {
			t.Fatal("no serialized section")
		}
		g := newGame(t, gg.params)
		s, err := g.DeserializeState(ser)
		if err != nil || s.Serialize() != ser || !s.IsTerminal() {
			t.Fatalf("DeserializeState of the golden game: %v", err)
		}
	})
}
