package duel

import (
	"os"
	"slices"
	"testing"

	"github.com/davidgoliath/dgenv/env"
)

// randomSteps is how many random-play steps the invariant run takes:
// DG_LONG=1 asks for millions.
func randomSteps() int {
	if os.Getenv("DG_LONG") != "" {
		return 5_000_000
	}
	if testing.Short() {
		return 20_000
	}
	if raceEnabled {
		return 100_000
	}
	return 300_000
}

// watch keeps what must only grow or shrink across a game.
type watch struct {
	wounds [2]uint8
	stones uint8 // David's tokens held or on the board: never more
	prev   string
}

// checkState asserts every invariant of a state that is shown to a player
// (or terminal). It is shared by the random-play run and the fuzz test.
func checkState(tb testing.TB, s *State, w *watch) {
	tb.Helper()
	t := &s.t
	fail := func(format string, args ...any) {
		tb.Helper()
		tb.Fatalf(format+"\n%s\nserialized:\n%s", append(args, s, s.Serialize())...)
	}
	if n := cardCount(s); n != DeckSize {
		fail("%d cards in hands, deck and discards, want %d", n, DeckSize)
	}
	var disc, hs [2]int
	for k := range NumKinds {
		disc[0] += int(t.discards[k])
		hs[0] += int(t.hand[0][k])
		hs[1] += int(t.hand[1][k])
		if n := int(t.hand[0][k]) + int(t.hand[1][k]) + int(t.discards[k]); n > int(Copies[k]) {
			fail("%d cards of kind %s outside the deck, the deck has %d", n, KindNames[k], Copies[k])
		}
	}
	if disc[0] != int(t.discLen) || hs[0] != int(t.handSize[0]) || hs[1] != int(t.handSize[1]) {
		fail("pile counts disagree: discards %d/%d hands %v/%v", disc[0], t.discLen, hs, t.handSize)
	}
	for p := range NumPlayers {
		if t.wounds[p] < w.wounds[p] {
			fail("seat %d wounds fell from %d to %d", p, w.wounds[p], t.wounds[p])
		}
		if t.wounds[p] >= MaxWounds && (!t.over || int(t.winner) != 1-p) {
			fail("seat %d has %d wounds and the game is not won by the other", p, t.wounds[p])
		}
		if t.handSize[p] > MaxHandCards {
			fail("seat %d holds %d cards", p, t.handSize[p])
		}
	}
	w.wounds = t.wounds
	for p := range NumPlayers {
		// What skipped decisions revealed must be true of the real hand.
		n := 0
		for k := range NumKinds {
			if t.lacks[p]&(1<<k) != 0 {
				n += int(t.hand[p][k])
			}
		}
		if n > int(t.wild[p]) {
			fail("seat %d holds %d cards of kinds it is known to lack (%b), %d drawn since", p, n, t.lacks[p], t.wild[p])
		}
	}
	stones := t.stonesHeld + t.stonesLeft
	if !t.over && t.stage == stDefendG {
		stones++ // the stone in flight
	}
	var on uint8
	for _, c := range t.stonesOn {
		on += c
	}
	if on != t.stonesLeft || stones > w.stones {
		fail("stones: held %d on board %d (counted %d), were %d; before:\n%s", t.stonesHeld, t.stonesLeft, on, w.stones, w.prev)
	}
	w.stones = stones
	if testing.Verbose() {
		w.prev = s.String()
	}
	blocked := t.rocks | t.trees
	if t.pos[0] == t.pos[1] || blocked&(1<<t.pos[0]) != 0 || blocked&(1<<t.pos[1]) != 0 {
		fail("figures on %d and %d", t.pos[0], t.pos[1])
	}
	if t.spearSq >= 0 && blocked&(1<<t.spearSq) != 0 {
		fail("spear on an obstacle")
	}

	var buf [NumActions]Action
	legal := s.AppendLegalActions(buf[:0])
	var mask [NumActions]uint8
	s.WriteMask(mask[:])
	if t.over {
		if len(legal) != 0 || mask != [NumActions]uint8{} || s.CurrentPlayer() != TerminalPlayer {
			fail("terminal state has legal actions %v", legal)
		}
		return
	}
	if len(legal) == 0 {
		fail("no legal action")
	}
	if len(legal) == 1 && legal[0] == ActPass {
		fail("a decision with pass alone was shown")
	}
	if len(legal) == 1 && s.Phase() != PhaseDiscard {
		fail("a forced %s decision was shown: %v", s.Phase(), legal)
	}
	if !slices.IsSorted(legal) {
		fail("legal actions not ascending: %v", legal)
	}
	n := 0
	for a, m := range mask {
		if m == 1 {
			if n >= len(legal) || legal[n] != a {
				fail("mask and legal list differ at %d: %v", a, legal)
			}
			n++
		}
	}
	if n != len(legal) {
		fail("mask has %d actions, legal list %d", n, len(legal))
	}
	if p := s.CurrentPlayer(); p != int(stagePlayer[t.stage]) || p < 0 || p > 1 {
		fail("CurrentPlayer() = %d", p)
	}
}

// checkObservation asserts the observation's ranges and what it must show.
func checkObservation(tb testing.TB, s *State, g *Game, player int) {
	tb.Helper()
	o := s.ObservationTensor(player)
	for _, sec := range g.ObservationLayout() {
		for i, v := range o[sec.Offset : sec.Offset+sec.Size()] {
			if int(v) < sec.Min || int(v) > sec.Max {
				tb.Fatalf("observation %s[%d] = %d outside %d..%d\n%s", sec.Name, i, v, sec.Min, sec.Max, s)
			}
		}
	}
	var own, opp int
	for i := range NumSquares {
		own += int(o[i])
		opp += int(o[NumSquares+i])
	}
	if own != 1 || opp != 1 {
		tb.Fatalf("figure planes hold %d and %d ones", own, opp)
	}
	if o[OffPublic+7] != uint8(player) || o[OffPublic] != uint8(s.HandSize(1-player)) || o[OffPublic+1] != uint8(s.DeckSize()) {
		tb.Fatalf("public section %v for seat %d", o[OffPublic:OffPhase], player)
	}
	var oneHot int
	for _, v := range o[OffPhase : OffPhase+6] {
		oneHot += int(v)
	}
	if want := 1; s.IsTerminal() && oneHot != 0 || !s.IsTerminal() && oneHot != want {
		tb.Fatalf("phase one-hot sums to %d", oneHot)
	}
}

// checkHidden changes what player cannot see (the opponent's hand and the
// deck order) and asserts player's observation does not change.
func checkHidden(tb testing.TB, s *State, player int, rng *env.RNG) {
	tb.Helper()
	c := s.Clone()
	t := &c.t
	o := 1 - player
	if t.deckLen > 0 && t.handSize[o] > 0 {
		// Swap one card of the opponent's hand with the deck's top card.
		i := rng.IntN(int(t.handSize[o]))
		for k := range NumKinds {
			if i < int(t.hand[o][k]) {
				top := t.deck[t.deckLen-1]
				t.hand[o][k]--
				t.hand[o][top]++
				t.deck[t.deckLen-1] = uint8(k)
				break
			}
			i -= int(t.hand[o][k])
		}
	}
	c.shuffleDeck()
	if a, b := s.ObservationTensor(player), c.ObservationTensor(player); !slices.Equal(a, b) {
		tb.Fatalf("seat %d's observation changed with the opponent's hand or the deck order", player)
	}
}

func TestInvariantsOverRandomPlay(t *testing.T) {
	g := MustNewGame(DefaultParams())
	total := randomSteps()
	rng := env.NewRNG(2024, 0)
	var games, decisive, steps int
	for seed := uint64(0); steps < total; seed++ {
		s := g.NewInitialState(seed)
		w := watch{stones: NumStones}
		var bot stateBot = RandomBot{}
		if seed%4 == 3 {
			bot = HeuristicBot{} // reach the heuristic's positions too (deaths, long fights)
		}
		for i := 0; ; i++ {
			checkState(t, s, &w)
			if i%16 == 0 || s.IsTerminal() {
				checkObservation(t, s, g, Goliath)
				checkObservation(t, s, g, David)
				checkHidden(t, s, int(seed%2), &rng)
			}
			if s.IsTerminal() {
				break
			}
			if i%64 == 5 {
				checkCloneAndSerialize(t, s, &rng)
			}
			a := bot.ActState(s, &rng)
			if !s.IsLegal(a) {
				t.Fatalf("bot chose illegal %d", a)
			}
			s.ApplyUnchecked(a)
			r := s.Rewards()
			if r[0]+r[1] != 0 || !s.IsTerminal() && (r[0] != 0 || r[1] != 0) {
				t.Fatalf("Rewards() = %v (terminal %v)", r, s.IsTerminal())
			}
			steps++
		}
		games++
		if s.Winner() >= 0 {
			decisive++
		}
		checkCloneAndSerialize(t, s, &rng)
		if _, err := s.Record().Replay(); err != nil {
			t.Fatalf("seed %d: Replay: %v", seed, err)
		}
	}
	t.Logf("%d steps, %d games, %d decisive", steps, games, decisive)
}

// checkCloneAndSerialize: a clone is independent of its origin, and
// Serialize/DeserializeState round-trips.
func checkCloneAndSerialize(tb testing.TB, s *State, rng *env.RNG) {
	tb.Helper()
	before := s.Serialize()
	c := s.Clone()
	if !c.Equal(s) {
		tb.Fatalf("clone differs from its origin")
	}
	if !c.IsTerminal() {
		c.ApplyUnchecked(RandomBot{}.ActState(c, rng))
		if s.Serialize() != before || len(s.History()) == len(c.History()) {
			tb.Fatalf("applying to a clone changed the origin")
		}
	}
	d, err := s.game.DeserializeState(before)
	if err != nil {
		tb.Fatalf("DeserializeState(Serialize()): %v", err)
	}
	if !d.Equal(s) {
		tb.Fatalf("DeserializeState(Serialize()) differs:\n%s\nwant\n%s", d, s)
	}
}
