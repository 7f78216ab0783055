package card_test

// Helpers shared by the engine's tests: building games and crafted deals,
// card sets, and a small reference model of the rules (refStep) that every
// playout compares the engine against, action by action.

import (
	"fmt"
	"slices"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
)

// newGame builds a game or stops the test.
func newGame(tb testing.TB, p card.Params) *card.Game {
	tb.Helper()
	g, err := card.NewGame(p)
	if err != nil {
		tb.Fatalf("NewGame(%+v) error = %v, want nil", p, err)
	}
	return g
}

// parseCard parses a card name such as "green 12" or stops the test.
func parseCard(tb testing.TB, name string) card.Card {
	tb.Helper()
	c, err := card.ParseCard(name)
	if err != nil {
		tb.Fatalf("ParseCard(%q) error = %v", name, err)
	}
	return c
}

// cards parses card names.
func cards(tb testing.TB, names ...string) []card.Card {
	tb.Helper()
	out := make([]card.Card, len(names))
	for i, n := range names {
		out[i] = parseCard(tb, n)
	}
	return out
}

// deck lists the cards of the deck for a player count, ascending by id,
// computed from the rulebook table rather than from card.InDeck.
func deck(players int) []card.Card {
	top := map[int]int{3: 9, 4: 12, 5: 15, 6: 18}[players]
	var out []card.Card
	for c := range card.NumColours {
		for v := 1; v <= top; v++ {
			out = append(out, card.Card(c*18+v-1))
		}
	}
	return out
}

// cardSet is a set of card ids 0..89 as a bit set.
type cardSet [2]uint64

func (s *cardSet) add(c card.Card)        { s[c/64] |= 1 << (c % 64) }
func (s *cardSet) has(c card.Card) bool   { return s[c/64]&(1<<(c%64)) != 0 }
func (s cardSet) union(o cardSet) cardSet { return cardSet{s[0] | o[0], s[1] | o[1]} }
func (s cardSet) inter(o cardSet) cardSet { return cardSet{s[0] & o[0], s[1] & o[1]} }
func (s cardSet) empty() bool             { return s == cardSet{} }
func (s cardSet) String() string          { return fmt.Sprint(s.list()) }
func (s cardSet) list() (out []card.Card) {
	for c := range card.NumActions {
		if s.has(card.Card(c)) {
			out = append(out, card.Card(c))
		}
	}
	return out
}

func setOf(cs []card.Card) cardSet {
	var s cardSet
	for _, c := range cs {
		s.add(c)
	}
	return s
}

// names renders cards for failure messages.
func names(cs []card.Card) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = card.CardString(c)
	}
	return out
}

// craftDeal builds a deal for players seats: fixed[seat] are dealt to seat,
// no seat in noColour[colour] gets a card of that colour, and the rest of the
// deck is spread so every hand has 15 cards. Constrained colours are placed
// first, each card on the allowed seat with the most room.
func craftDeal(tb testing.TB, players int, fixed map[int][]card.Card, noColour map[int][]int) card.Hands {
	tb.Helper()
	hands := make(card.Hands, players)
	var used cardSet
	for seat, cs := range fixed {
		for _, c := range cs {
			if used.has(c) {
				tb.Fatalf("craftDeal: %s fixed twice", card.CardString(c))
			}
			used.add(c)
			hands[seat] = append(hands[seat], c)
		}
	}
	forbidden := func(seat, colour int) bool { return slices.Contains(noColour[colour], seat) }
	rest := deck(players)
	slices.SortStableFunc(rest, func(a, b card.Card) int {
		return len(noColour[card.Colour(b)]) - len(noColour[card.Colour(a)])
	})
	for _, c := range rest {
		if used.has(c) {
			continue
		}
		best := -1
		for seat := range players {
			if forbidden(seat, card.Colour(c)) || len(hands[seat]) >= card.HandSize {
				continue
			}
			if best < 0 || len(hands[seat]) < len(hands[best]) {
				best = seat
			}
		}
		if best < 0 {
			tb.Fatalf("craftDeal: no seat can take %s", card.CardString(c))
		}
		hands[best] = append(hands[best], c)
	}
	for seat, h := range hands {
		if len(h) != card.HandSize {
			tb.Fatalf("craftDeal: seat %d has %d cards", seat, len(h))
		}
		for _, c := range h {
			if forbidden(seat, card.Colour(c)) && !slices.Contains(fixed[seat], c) {
				tb.Fatalf("craftDeal: seat %d got forbidden %s", seat, card.CardString(c))
			}
		}
	}
	return hands
}

// stateForTrick deals a hand in which seats leader, leader+1, ... can play
// trick in that order legally: every seat that does not follow the lead
// colour is dealt none of it. The game has first_dealer = leader-1, so
// leader leads the first trick.
func stateForTrick(tb testing.TB, players int, trick []card.Card) (*card.State, int) {
	tb.Helper()
	leader := 2 % players
	dealer := (leader - 1 + players) % players
	fixed := map[int][]card.Card{}
	noColour := map[int][]int{}
	lead := card.Colour(trick[0])
	for i, c := range trick {
		seat := (leader + i) % players
		fixed[seat] = append(fixed[seat], c)
		if i > 0 && card.Colour(c) != lead {
			noColour[lead] = append(noColour[lead], seat)
		}
	}
	hands := craftDeal(tb, players, fixed, noColour)
	g := newGame(tb, card.Params{Players: players, Deals: 1, FirstDealer: dealer})
	s, err := g.NewStateFromDeals(1, hands)
	if err != nil {
		tb.Fatalf("NewStateFromDeals error = %v", err)
	}
	return s, leader
}

// mustApply plays the cards in order or stops the test.
func mustApply(tb testing.TB, s *card.State, cs ...card.Card) {
	tb.Helper()
	for _, c := range cs {
		if err := s.ApplyAction(card.Action(c)); err != nil {
			tb.Fatalf("ApplyAction(%s) error = %v, want nil", card.CardString(c), err)
		}
	}
}

// snap is what the public API shows of a state.
type snap struct {
	players, deal, tricks, dealer, leader, current int
	terminal                                       bool
	hands, prizes                                  []cardSet
	trick                                          []card.Card
	voids                                          []uint8
	totals                                         []int
}

func takeSnap(s *card.State) snap {
	p := s.Game().NumPlayers()
	trick, leader := s.Trick()
	sn := snap{
		players: p, deal: s.DealIndex(), tricks: s.TricksDone(), dealer: s.Dealer(),
		leader: leader, current: s.CurrentPlayer(), terminal: s.IsTerminal(),
		trick: trick, totals: s.Totals(),
	}
	for seat := range p {
		sn.hands = append(sn.hands, setOf(s.Hand(seat)))
		sn.prizes = append(sn.prizes, setOf(s.Prizes(seat)))
		sn.voids = append(sn.voids, s.Voids(seat))
	}
	return sn
}

// refScore scores a prize pile as the rulebook says, colour by colour.
func refScore(cs []card.Card) int {
	var n, sum [card.NumColours]int
	for _, c := range cs {
		n[card.Colour(c)]++
		sum[card.Colour(c)] += card.Value(c)
	}
	total := 0
	for c := range n {
		switch {
		case n[c] >= 3:
			total += n[c]
		default:
			total += sum[c]
		}
	}
	return total
}

// refTrick resolves a complete trick by the rulebook, written independently
// of the engine: positions (in play order) of the highest and lowest card.
func refTrick(trick []card.Card) (hi, lo int) {
	maxV, minV := 0, 99
	for _, c := range trick {
		maxV = max(maxV, card.Value(c))
		minV = min(minV, card.Value(c))
	}
	if maxV == minV {
		return len(trick) - 1, len(trick) - 2
	}
	for i, c := range trick {
		if card.Value(c) == maxV {
			hi = i
		}
		if card.Value(c) == minV {
			lo = i
		}
	}
	return hi, lo
}

// refLegal lists the legal cards for the seat to act in a snapshot.
func refLegal(sn *snap) []card.Action {
	if sn.terminal {
		return nil
	}
	hand := sn.hands[sn.current].list()
	var out []card.Action
	if len(sn.trick) > 0 {
		lead := card.Colour(sn.trick[0])
		for _, c := range hand {
			if card.Colour(c) == lead {
				out = append(out, card.Action(c))
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	for _, c := range hand {
		out = append(out, card.Action(c))
	}
	return out
}

// checkStep compares the engine's move from before to after (playing a)
// with the reference rules. rewards are after.Rewards(). It returns true
// when a ended a deal.
func checkStep(tb testing.TB, params card.Params, before *snap, a card.Action, after *snap, rewards []float64) bool {
	tb.Helper()
	p := before.players
	c := card.Card(a)
	want := snap{
		players: p, deal: before.deal, tricks: before.tricks, dealer: before.dealer,
		leader: before.leader, terminal: false,
		hands: slices.Clone(before.hands), prizes: slices.Clone(before.prizes),
		trick: append(slices.Clone(before.trick), c), voids: slices.Clone(before.voids),
		totals: slices.Clone(before.totals),
	}
	seat := before.current
	h := want.hands[seat]
	h[c/64] &^= 1 << (c % 64)
	want.hands[seat] = h
	if len(before.trick) > 0 && card.Colour(before.trick[0]) != card.Colour(c) {
		want.voids[seat] |= 1 << card.Colour(before.trick[0])
	}
	dealEnded := false
	var dealScores []int
	if len(want.trick) == p {
		hi, lo := refTrick(want.trick)
		hiSeat, loSeat := (before.leader+hi)%p, (before.leader+lo)%p
		for i, x := range want.trick {
			to := hiSeat
			if i == hi {
				to = loSeat
			}
			pz := want.prizes[to]
			pz.add(x)
			want.prizes[to] = pz
		}
		want.trick = nil
		want.leader = hiSeat
		want.tricks++
		if want.tricks == card.TricksPerDeal {
			dealEnded = true
			for s := range p {
				pts := refScore(want.prizes[s].list())
				dealScores = append(dealScores, pts)
				want.totals[s] += pts
			}
			if before.deal+1 == params.Deals {
				want.terminal = true
			}
		}
	}
	want.current = (want.leader + len(want.trick)) % p
	if want.terminal {
		want.current = env.TerminalPlayer
	}

	for s := range p {
		wantR := 0.0
		if dealEnded {
			wantR = float64(dealScores[s])
		}
		if rewards[s] != wantR {
			tb.Fatalf("after %s: Rewards()[%d] = %v, want %v", card.CardString(c), s, rewards[s], wantR)
		}
	}
	if !slices.Equal(after.totals, want.totals) {
		tb.Fatalf("after %s: Totals() = %v, want %v", card.CardString(c), after.totals, want.totals)
	}
	if after.terminal != want.terminal {
		tb.Fatalf("after %s: IsTerminal() = %v, want %v", card.CardString(c), after.terminal, want.terminal)
	}
	if dealEnded && !want.terminal {
		// A new deal: dealt by the next seat, led by the seat on its left.
		deal := before.deal + 1
		dealer := (params.FirstDealer + deal) % p
		if after.deal != deal || after.dealer != dealer || after.leader != (dealer+1)%p ||
			after.current != (dealer+1)%p || after.tricks != 0 || len(after.trick) != 0 {
			tb.Fatalf("new deal: deal %d dealer %d leader %d current %d tricks %d trick %v, want deal %d dealer %d leader %d, no tricks",
				after.deal, after.dealer, after.leader, after.current, after.tricks, after.trick, deal, dealer, (dealer+1)%p)
		}
		var all cardSet
		for s := range p {
			if n := len(after.hands[s].list()); n != card.HandSize {
				tb.Fatalf("new deal: seat %d holds %d cards, want %d", s, n, card.HandSize)
			}
			if !after.prizes[s].empty() || after.voids[s] != 0 {
				tb.Fatalf("new deal: seat %d prizes %v voids %b, want none", s, after.prizes[s], after.voids[s])
			}
			all = all.union(after.hands[s])
		}
		if all != setOf(deck(p)) {
			tb.Fatalf("new deal: hands hold %v, want the %d-player deck", all, p)
		}
		return true
	}
	if after.deal != want.deal || after.dealer != want.dealer || after.leader != want.leader ||
		after.current != want.current || after.tricks != want.tricks {
		tb.Fatalf("after %s: deal %d dealer %d leader %d current %d tricks %d, want %d %d %d %d %d",
			card.CardString(c), after.deal, after.dealer, after.leader, after.current, after.tricks,
			want.deal, want.dealer, want.leader, want.current, want.tricks)
	}
	if !slices.Equal(after.trick, want.trick) {
		tb.Fatalf("after %s: trick = %v, want %v", card.CardString(c), names(after.trick), names(want.trick))
	}
	for s := range p {
		if after.hands[s] != want.hands[s] {
			tb.Fatalf("after %s: seat %d hand = %v, want %v", card.CardString(c), s, names(after.hands[s].list()), names(want.hands[s].list()))
		}
		if after.prizes[s] != want.prizes[s] {
			tb.Fatalf("after %s: seat %d prizes = %v, want %v", card.CardString(c), s, names(after.prizes[s].list()), names(want.prizes[s].list()))
		}
		if after.voids[s] != want.voids[s] {
			tb.Fatalf("after %s: seat %d voids = %05b, want %05b", card.CardString(c), s, after.voids[s], want.voids[s])
		}
	}
	return dealEnded
}

// checkConserved checks that hands, trick and prizes hold the deck once each.
func checkConserved(tb testing.TB, sn *snap) {
	tb.Helper()
	var all cardSet
	n := 0
	add := func(s cardSet, where string) {
		if x := all.inter(s); !x.empty() {
			tb.Fatalf("cards %v are twice on the table (again in %s)", names(x.list()), where)
		}
		all = all.union(s)
		n += len(s.list())
	}
	for s := range sn.players {
		add(sn.hands[s], fmt.Sprintf("seat %d hand", s))
		add(sn.prizes[s], fmt.Sprintf("seat %d prizes", s))
	}
	add(setOf(sn.trick), "trick")
	if want := setOf(deck(sn.players)); all != want {
		tb.Fatalf("table holds %d cards %v, want the %d-player deck", n, names(all.list()), sn.players)
	}
	// Hand sizes: 15 less the tricks done, less one for seats already in this trick.
	if sn.terminal {
		return
	}
	for s := range sn.players {
		want := card.HandSize - sn.tricks
		if (s-sn.leader+sn.players)%sn.players < len(sn.trick) {
			want--
		}
		if got := len(sn.hands[s].list()); got != want {
			tb.Fatalf("seat %d holds %d cards after %d tricks (trick has %d cards, led by %d), want %d",
				s, got, sn.tricks, len(sn.trick), sn.leader, want)
		}
	}
}

// checkLegal compares LegalActions, LegalActionsMask, NumLegal and IsLegal
// with each other and with the reference rules.
func checkLegal(tb testing.TB, s *card.State, sn *snap) []card.Action {
	tb.Helper()
	legal := s.LegalActions()
	if want := refLegal(sn); !slices.Equal(legal, want) {
		tb.Fatalf("LegalActions() = %v, want %v (hand %v, trick %v)", legal, want, names(sn.hands[max(sn.current, 0)].list()), names(sn.trick))
	}
	if !slices.IsSorted(legal) {
		tb.Fatalf("LegalActions() = %v, want ascending", legal)
	}
	if !sn.terminal && len(legal) == 0 {
		tb.Fatalf("LegalActions() is empty in a running game")
	}
	if n := s.NumLegal(); n != len(legal) {
		tb.Fatalf("NumLegal() = %d, want %d", n, len(legal))
	}
	mask := s.LegalActionsMask()
	if len(mask) != card.NumActions {
		tb.Fatalf("len(LegalActionsMask()) = %d, want %d", len(mask), card.NumActions)
	}
	for a := range card.NumActions {
		want := slices.Contains(legal, a)
		if mask[a] != want {
			tb.Fatalf("LegalActionsMask()[%d] = %v, want %v", a, mask[a], want)
		}
		if s.IsLegal(a) != want {
			tb.Fatalf("IsLegal(%d) = %v, want %v", a, !want, want)
		}
		if want && !card.InDeck(card.Card(a), sn.players) {
			tb.Fatalf("legal action %d (%s) is not in the %d-player deck", a, card.CardString(card.Card(a)), sn.players)
		}
	}
	for _, a := range []int{-1, card.NumActions, 1000} {
		if s.IsLegal(a) {
			tb.Fatalf("IsLegal(%d) = true, want false", a)
		}
	}
	return legal
}

// randomAction picks uniformly among legal.
func randomAction(rng *env.RNG, legal []card.Action) card.Action { return legal[rng.IntN(len(legal))] }
