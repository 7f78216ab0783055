package duel

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/davidgoliath/dgenv/env"
)

func TestApplyActionRefusesAnIllegalActionAndChangesNothing(t *testing.T) {
	g := MustNewGame(DefaultParams())
	s := g.NewInitialState(3)
	before := s.Clone()
	for _, a := range []Action{-1, NumActions, 1000} {
		err := s.ApplyAction(a)
		var ie *IllegalActionError
		if !errors.Is(err, ErrIllegalAction) || !errors.As(err, &ie) || ie.Action != a || ie.Player != s.CurrentPlayer() || len(ie.Legal) == 0 {
			t.Fatalf("ApplyAction(%d) = %v, want an *IllegalActionError", a, err)
		}
	}
	for a := range NumActions {
		if !s.IsLegal(a) && s.ApplyAction(a) == nil {
			t.Fatalf("ApplyAction(%d) accepted an action IsLegal refuses", a)
		}
	}
	if !s.Equal(before) {
		t.Fatalf("refused actions changed the state")
	}
	for !s.IsTerminal() {
		apply(t, s, s.LegalActions()[0])
	}
	if err := s.ApplyAction(ActPass); !errors.Is(err, ErrIllegalAction) {
		t.Fatalf("ApplyAction on a finished game = %v, want ErrIllegalAction", err)
	}
}

func TestASeedFixesTheGame(t *testing.T) {
	g := MustNewGame(DefaultParams())
	for seed := range uint64(20) {
		a, b := g.NewInitialState(seed), g.NewInitialState(seed)
		ra, rb := env.NewRNG(seed, 5), env.NewRNG(seed, 5)
		for !a.IsTerminal() {
			a.ApplyUnchecked(RandomBot{}.ActState(a, &ra))
			b.ApplyUnchecked(RandomBot{}.ActState(b, &rb))
			if !a.Equal(b) {
				t.Fatalf("seed %d: two games with the same actions differ", seed)
			}
		}
	}
	if g.NewInitialState(1).Equal(g.NewInitialState(2)) {
		t.Errorf("seeds 1 and 2 give the same game")
	}
}

func TestResetReusesTheState(t *testing.T) {
	g := MustNewGame(DefaultParams())
	s := g.NewInitialState(8)
	rng := env.NewRNG(1, 1)
	for range 50 {
		s.ApplyUnchecked(RandomBot{}.ActState(s, &rng))
	}
	s.Reset(9)
	if !s.Equal(g.NewInitialState(9)) {
		t.Fatalf("Reset(9) differs from NewInitialState(9)")
	}
}

func TestDeserializeRefusesBadText(t *testing.T) {
	g := MustNewGame(DefaultParams())
	good := g.NewInitialState(4).Serialize()
	for _, tc := range []struct{ name, text string }{
		{"an empty text", ""},
		{"a wrong header", strings.Replace(good, "duel v1", "duel v9", 1)},
		{"another game's max_rounds", strings.Replace(good, "params 100", "params 50", 1)},
		{"a seed that is not a number", strings.Replace(good, "seed 4", "seed x", 1)},
		{"an action that is not a number", strings.TrimSpace(good) + " x\n"},
		{"an illegal action", strings.TrimSpace(good) + " 116 116 116 116\n"},
		{"a missing actions line", strings.Replace(good, "actions", "", 1)},
	} {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			if _, err := g.DeserializeState(tc.text); !errors.Is(err, ErrBadSerialization) {
				t.Fatalf("DeserializeState = %v, want ErrBadSerialization", err)
			}
		})
	}
}

func TestReplayChecksTheRecord(t *testing.T) {
	g := MustNewGame(DefaultParams())
	s := g.NewInitialState(12)
	rng := env.NewRNG(12, 1)
	for !s.IsTerminal() {
		s.ApplyUnchecked(HeuristicBot{}.ActState(s, &rng))
	}
	r := s.Record()
	got, err := r.Replay()
	if err != nil || !got.Equal(s) {
		t.Fatalf("Replay() = %v; equal %v", err, err == nil && got.Equal(s))
	}
	r.Winner = 1 - r.Winner
	if _, err := r.Replay(); !errors.Is(err, ErrReplayMismatch) {
		t.Fatalf("Replay of a record with the wrong winner = %v, want ErrReplayMismatch", err)
	}
	r = s.Record()
	r.Actions = append(r.Actions, ActPass)
	if _, err := r.Replay(); !errors.Is(err, ErrIllegalAction) {
		t.Fatalf("Replay with an action past the end = %v, want ErrIllegalAction", err)
	}
}

func TestGameSizes(t *testing.T) {
	g := MustNewGame(DefaultParams())
	if g.NumDistinctActions() != 117 || g.NumPlayers() != 2 || g.ObservationTensorShape()[0] != 461 {
		t.Fatalf("sizes %d %d %v", g.NumDistinctActions(), g.NumPlayers(), g.ObservationTensorShape())
	}
	off := 0
	for _, sec := range g.ObservationLayout() {
		if sec.Offset != off {
			t.Errorf("section %s at %d, want %d", sec.Name, sec.Offset, off)
		}
		off += sec.Size()
	}
	if off != ObsSize {
		t.Errorf("sections end at %d, want %d", off, ObsSize)
	}
	for a := range NumActions {
		if strings.Contains(ActionName(a), "?") {
			t.Errorf("ActionName(%d) = %q", a, ActionName(a))
		}
	}
	// The longest game seen stays inside MaxGameLength.
	longest := 0
	for seed := range uint64(300) {
		s := g.NewInitialState(seed)
		rng := env.NewRNG(seed, 3)
		for !s.IsTerminal() {
			s.ApplyUnchecked(RandomBot{}.ActState(s, &rng))
		}
		longest = max(longest, len(s.History()))
	}
	if longest > g.MaxGameLength() {
		t.Errorf("a game of %d actions, MaxGameLength() = %d", longest, g.MaxGameLength())
	}
}

func TestHeuristicBeatsRandomInBothRoles(t *testing.T) {
	g := MustNewGame(DefaultParams())
	const games = 300
	var heuristicWins, randomWins [2]int // by the heuristic's seat
	for seed := range uint64(games) {
		for hseat := range NumPlayers { // duplicate: same seed, roles swapped
			s := g.NewInitialState(seed)
			rng := env.NewRNG(seed, 1)
			for !s.IsTerminal() {
				var b stateBot = RandomBot{}
				if s.CurrentPlayer() == hseat {
					b = HeuristicBot{}
				}
				s.ApplyUnchecked(b.ActState(s, &rng))
			}
			switch s.Winner() {
			case hseat:
				heuristicWins[hseat]++
			case 1 - hseat:
				randomWins[hseat]++
			}
		}
	}
	t.Logf("heuristic as Goliath: %d wins, %d losses; as David: %d wins, %d losses (of %d)",
		heuristicWins[0], randomWins[0], heuristicWins[1], randomWins[1], games)
	// Deterministic (fixed seeds); observed about 96%% wins in each role.
	for seat := range NumPlayers {
		if heuristicWins[seat] < games*80/100 || randomWins[seat] > games*10/100 {
			t.Errorf("heuristic as %s won %d and lost %d of %d", SeatName(seat), heuristicWins[seat], randomWins[seat], games)
		}
	}
}

func TestBotsAllocateNothing(t *testing.T) {
	g := MustNewGame(DefaultParams())
	for _, bot := range []stateBot{RandomBot{}, HeuristicBot{}} {
		s := g.NewInitialState(1)
		rng := env.NewRNG(1, 1)
		var mask [NumActions]uint8
		var o [ObsSize]uint8
		seed := uint64(1)
		step := func() {
			if s.IsTerminal() {
				seed++
				s.Reset(seed)
			}
			if err := s.ApplyAction(bot.ActState(s, &rng)); err != nil {
				panic(err)
			}
			s.WriteMask(mask[:])
			p := max(s.CurrentPlayer(), 0)
			s.WriteObservation(o[:], p)
			s.WriteObservation(o[:], 1-p)
		}
		if n := testing.AllocsPerRun(20000, step); n != 0 {
			t.Errorf("%T: %v allocs per step (act, apply, mask, both observations), want 0", bot, n)
		}
	}
}

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// Golden playthroughs: whole games pinned as text. Regenerate with
//
//	go test ./env/duel -run TestGolden -update
func TestGoldenPlaythroughs(t *testing.T) {
	for _, gp := range []struct {
		file      string
		seed      uint64
		maxRounds int
		bots      [2]stateBot
	}{
		{"playthrough_random.txt", 1, 12, [2]stateBot{RandomBot{}, RandomBot{}}},
		{"playthrough_heuristic.txt", 2, 100, [2]stateBot{HeuristicBot{}, HeuristicBot{}}},
	} {
		t.Run(gp.file, func(t *testing.T) {
			got := playthrough(t, gp.seed, gp.maxRounds, gp.bots)
			path := filepath.Join("testdata", gp.file)
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
				for i := range min(len(gl), len(wl)) {
					if gl[i] != wl[i] {
						t.Fatalf("%s differs at line %d:\ngot  %q\nwant %q\n(regenerate with -update if the change is intended)", path, i+1, gl[i], wl[i])
					}
				}
				t.Fatalf("%s: %d lines, want %d", path, len(gl), len(wl))
			}
		})
	}
}

func playthrough(tb testing.TB, seed uint64, maxRounds int, bots [2]stateBot) string {
	tb.Helper()
	g := MustNewGame(Params{MaxRounds: maxRounds})
	s := g.NewInitialState(seed)
	rng := env.NewRNG(seed, 1000)
	var sb strings.Builder
	fmt.Fprintf(&sb, "# Duel playthrough. Regenerate: go test ./env/duel -run TestGolden -update\n")
	fmt.Fprintf(&sb, "# max_rounds=%d; NewInitialState(%d); Goliath %T, David %T, drawing from NewRNG(%d, 1000)\n\n", maxRounds, seed, bots[0], bots[1], seed)
	fmt.Fprintf(&sb, "initial state:\n%s", s)
	for p := range NumPlayers {
		fmt.Fprintf(&sb, "observation for %s:\n%s", SeatName(p), observationText(s, g, p))
	}
	sb.WriteString("\n")
	for n := 1; !s.IsTerminal(); n++ {
		legal := s.LegalActions()
		p := s.CurrentPlayer()
		a := bots[p].ActState(s, &rng)
		apply(tb, s, a)
		fmt.Fprintf(&sb, "action %d: %s %s (%d) from %v\n", n, SeatName(p), ActionName(a), a, legal)
		fmt.Fprintf(&sb, "rewards %v returns %v\n%s\n", s.Rewards(), s.Returns(), s)
	}
	fmt.Fprintf(&sb, "terminal: CurrentPlayer %d winner %d rounds %d\n", s.CurrentPlayer(), s.Winner(), s.Round())
	for p := range NumPlayers {
		fmt.Fprintf(&sb, "observation for %s:\n%s", SeatName(p), observationText(s, g, p))
	}
	fmt.Fprintf(&sb, "serialized:\n%s", s.Serialize())
	return sb.String()
}

// observationText writes the observation's non-board sections, and the
// board planes as the non-zero squares (in the observer's coordinates).
func observationText(s *State, g *Game, p int) string {
	o := s.ObservationTensor(p)
	var sb strings.Builder
	for _, sec := range g.ObservationLayout() {
		v := o[sec.Offset : sec.Offset+sec.Size()]
		if sec.Name != "board" {
			fmt.Fprintf(&sb, "  %s %v\n", sec.Name, v)
			continue
		}
		for plane := range BoardPlanes {
			fmt.Fprintf(&sb, "  board[%d]", plane)
			for i, x := range v[plane*NumSquares : (plane+1)*NumSquares] {
				if x != 0 {
					fmt.Fprintf(&sb, " %s=%d", SquareName(i), x)
				}
			}
			sb.WriteString("\n")
		}
	}
	return sb.String()
}

// FuzzPlay turns bytes into a game: the first 8 bytes are the seed, each
// later byte picks a legal action (low bits) or, with the top bit, tries
// the action id it names to check that an illegal one is refused cleanly.
func FuzzPlay(f *testing.F) {
	f.Add([]byte("\x01\x00\x00\x00\x00\x00\x00\x00\x03\x05\x07\x80\xff\x10"))
	f.Add([]byte("seedseed" + strings.Repeat("\x00\x01\x02\x03", 100)))
	f.Add([]byte("\x09\x09\x09\x09\x09\x09\x09\x09" + strings.Repeat("\x84\x02", 300)))
	g := MustNewGame(Params{MaxRounds: 30})
	f.Fuzz(func(t *testing.T, data []byte) {
		var seed uint64
		for i := 0; i < 8 && i < len(data); i++ {
			seed |= uint64(data[i]) << (8 * i)
		}
		s := g.NewInitialState(seed)
		w := watch{stones: NumStones}
		checkState(t, s, &w)
		for i := 8; i < len(data) && !s.IsTerminal(); i++ {
			b := data[i]
			if b&0x80 != 0 {
				a := int(b&0x7f) % NumActions
				before := s.Clone()
				err := s.ApplyAction(a)
				if (err == nil) != before.IsLegal(a) {
					t.Fatalf("ApplyAction(%d) = %v but IsLegal = %v", a, err, before.IsLegal(a))
				}
				if err != nil && !s.Equal(before) {
					t.Fatalf("a refused action changed the state")
				}
			} else {
				legal := s.LegalActions()
				apply(t, s, legal[int(b)%len(legal)])
			}
			checkState(t, s, &w)
		}
		d, err := g.DeserializeState(s.Serialize())
		if err != nil || !d.Equal(s) {
			t.Fatalf("round trip: %v", err)
		}
		checkObservation(t, s, g, Goliath)
		checkObservation(t, s, g, David)
	})
}

// BenchmarkRandomPlay steps 256 games in a slice with random actions, as a
// vectorised env would: act, apply, mask and the next player's
// observation per step, resetting finished games.
func BenchmarkRandomPlay(b *testing.B) {
	g := MustNewGame(DefaultParams())
	const n = 256
	states := make([]*State, n)
	for i := range states {
		states[i] = g.NewInitialState(uint64(i))
	}
	masks := make([]uint8, n*NumActions)
	obs := make([]uint8, n*ObsSize)
	rng := env.NewRNG(1, 1)
	seed := uint64(n)
	b.ReportAllocs()
	b.ResetTimer()
	steps := 0
	for b.Loop() {
		for i, s := range states {
			s.ApplyUnchecked(RandomBot{}.ActState(s, &rng))
			if s.IsTerminal() {
				s.Reset(seed)
				seed++
			}
			s.WriteMask(masks[i*NumActions : (i+1)*NumActions])
			s.WriteObservation(obs[i*ObsSize:(i+1)*ObsSize], s.CurrentPlayer())
		}
		steps += n
	}
	b.ReportMetric(float64(steps)/b.Elapsed().Seconds(), "steps/s")
}

// BenchmarkApply is the engine alone: a random legal action applied, unchecked.
func BenchmarkApply(b *testing.B) {
	g := MustNewGame(DefaultParams())
	s := g.NewInitialState(1)
	rng := env.NewRNG(1, 1)
	seed := uint64(2)
	b.ReportAllocs()
	for b.Loop() {
		s.ApplyUnchecked(RandomBot{}.ActState(s, &rng))
		if s.IsTerminal() {
			s.Reset(seed)
			seed++
		}
	}
}

// BenchmarkHeuristic is one heuristic decision.
func BenchmarkHeuristic(b *testing.B) {
	g := MustNewGame(DefaultParams())
	s := g.NewInitialState(1)
	rng := env.NewRNG(1, 1)
	seed := uint64(2)
	b.ReportAllocs()
	for b.Loop() {
		s.ApplyUnchecked(HeuristicBot{}.ActState(s, &rng))
		if s.IsTerminal() {
			s.Reset(seed)
			seed++
		}
	}
}
