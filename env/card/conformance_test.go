package card_test

// The shared conformance check (STYLE.md habit 6): random playouts for every
// player count, each action compared with the reference rules, and at
// sampled points the deep checks: clone independence, serialization round
// trip with identical future play, observation ranges and contents, and
// resampled worlds that agree with what each seat knows.

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
)

// playoutStats is what a checked playout saw.
type playoutStats struct {
	actions, deals, deep int
}

// conformancePlayout plays s to the end with random legal actions from rng,
// checking every action against the reference rules and running the deep
// checks every deepEvery actions (0: never) and at the start and end.
func conformancePlayout(tb testing.TB, s *card.State, rng *env.RNG, deepEvery int) playoutStats {
	tb.Helper()
	g := s.Game()
	params := g.Params()
	p := params.Players
	var st playoutStats
	wantDeals := params.Deals - s.DealIndex()
	if s.IsTerminal() {
		wantDeals = 0
	}
	sum := make([]float64, p)
	copy(sum, s.Returns())
	plays := make([]int, p) // cards each seat played in the deal in progress
	for seat := range p {
		plays[seat] = card.HandSize - len(s.Hand(seat))
	}
	before := takeSnap(s)
	checkConserved(tb, &before)
	for !s.IsTerminal() {
		legal := checkLegal(tb, s, &before)
		if deepEvery > 0 && st.actions%deepEvery == 0 {
			deepCheck(tb, s, rng)
			st.deep++
		}
		a := randomAction(rng, legal)
		plays[before.current]++
		if err := s.ApplyAction(a); err != nil {
			tb.Fatalf("ApplyAction(%d) of a legal action: error = %v", a, err)
		}
		st.actions++
		after := takeSnap(s)
		rewards := s.Rewards()
		if checkStep(tb, params, &before, a, &after, rewards) {
			st.deals++
			for seat, n := range plays {
				if n != card.HandSize {
					tb.Fatalf("deal %d: seat %d played %d cards, want %d", before.deal, seat, n, card.HandSize)
				}
			}
			clear(plays)
			if deepEvery > 0 && !s.IsTerminal() { // a state whose Rewards are a deal's points
				deepCheck(tb, s, rng)
				st.deep++
			}
		}
		for i, r := range rewards {
			sum[i] += r
		}
		if ret := s.Returns(); !slices.Equal(ret, sum) {
			tb.Fatalf("Step(%d) Returns() = %v, want the sum of rewards %v", st.actions, ret, sum)
		}
		checkConserved(tb, &after)
		before = after
	}
	if s.CurrentPlayer() != env.TerminalPlayer {
		tb.Fatalf("CurrentPlayer() at the end = %d, want TerminalPlayer %d", s.CurrentPlayer(), env.TerminalPlayer)
	}
	if want := g.MaxGameLength(); st.actions != want && len(s.History()) != want {
		tb.Fatalf("game length = %d (history %d), want %d", st.actions, len(s.History()), want)
	}
	if st.deals != wantDeals {
		tb.Fatalf("deals played = %d, want %d", st.deals, wantDeals)
	}
	checkLegal(tb, s, &before)
	if deepEvery > 0 {
		deepCheck(tb, s, rng)
		st.deep++
	}
	for i, t := range s.Returns() {
		if t < g.MinUtility() || t > g.MaxUtility() {
			tb.Fatalf("Returns()[%d] = %v, outside [%v, %v]", i, t, g.MinUtility(), g.MaxUtility())
		}
	}
	return st
}

// playToEnd plays s to the end with actions from rng, checking only that the
// chosen legal actions are accepted; it returns the actions played.
func playToEnd(tb testing.TB, s *card.State, rng *env.RNG) []card.Action {
	tb.Helper()
	var played []card.Action
	for !s.IsTerminal() {
		legal := s.LegalActions()
		if len(legal) == 0 {
			tb.Fatalf("no legal action in a running game:\n%s", s)
		}
		a := randomAction(rng, legal)
		if err := s.ApplyAction(a); err != nil {
			tb.Fatalf("ApplyAction(%d) of a legal action: error = %v", a, err)
		}
		played = append(played, a)
	}
	return played
}

// deepCheck runs the expensive checks on s, leaving s unchanged.
func deepCheck(tb testing.TB, s *card.State, rng *env.RNG) {
	tb.Helper()
	g := s.Game()
	text := s.Serialize()
	str := s.String()
	seed := rng.Uint64()

	// Clone is independent: playing the clone out leaves s as it was.
	c := s.Clone()
	if c.Serialize() != text || c.String() != str || !slices.Equal(c.Rewards(), s.Rewards()) {
		tb.Fatalf("Clone() differs from the original")
	}
	playToEnd(tb, c, ptr(env.NewRNG(seed, 1)))
	if s.Serialize() != text || s.String() != str {
		tb.Fatalf("playing a Clone() changed the original")
	}

	// Serialize round-trips, and the copy's future is the original's.
	d, err := g.DeserializeState(text)
	if err != nil {
		tb.Fatalf("DeserializeState(Serialize()) error = %v\n%s", err, text)
	}
	if got := d.Serialize(); got != text {
		tb.Fatalf("Serialize() after a round trip:\n%s\nwant\n%s", got, text)
	}
	if d.String() != str || !slices.Equal(d.History(), s.History()) || !slices.Equal(d.Returns(), s.Returns()) ||
		!slices.Equal(d.Rewards(), s.Rewards()) || d.CurrentPlayer() != s.CurrentPlayer() {
		tb.Fatalf("DeserializeState(Serialize()) shows a different state:\n%s\nwant\n%s", d, str)
	}
	c2 := s.Clone()
	r1, r2 := env.NewRNG(seed, 2), env.NewRNG(seed, 2)
	for !c2.IsTerminal() {
		l1, l2 := c2.LegalActions(), d.LegalActions()
		if !slices.Equal(l1, l2) {
			tb.Fatalf("after a round trip LegalActions() = %v, want %v", l2, l1)
		}
		mustApply(tb, c2, card.Card(randomAction(&r1, l1)))
		mustApply(tb, d, card.Card(randomAction(&r2, l2)))
		if !slices.Equal(c2.Rewards(), d.Rewards()) {
			tb.Fatalf("after a round trip Rewards() = %v, want %v", d.Rewards(), c2.Rewards())
		}
	}
	if !d.IsTerminal() || c2.Serialize() != d.Serialize() || c2.String() != d.String() {
		tb.Fatalf("a deserialized state played differently:\n%s\nwant\n%s", d, c2)
	}

	checkObservations(tb, s)
	checkResample(tb, s, rng)
	if s.Serialize() != text {
		tb.Fatalf("deep checks changed the state")
	}
}

func ptr[T any](v T) *T { return &v }

// checkObservations checks every seat's observation against the state and
// the ranges the layout states.
func checkObservations(tb testing.TB, s *card.State) {
	tb.Helper()
	g := s.Game()
	l := g.ObservationLayout()
	p := g.NumPlayers()
	trick, leader := s.Trick()
	buf := make([]uint8, l.Size)
	for i := range buf {
		buf[i] = 0xAA // WriteObservation must overwrite everything
	}
	for me := range p {
		o := s.ObservationTensor(me)
		if len(o) != l.Size {
			tb.Fatalf("len(ObservationTensor(%d)) = %d, want %d", me, len(o), l.Size)
		}
		s.WriteObservation(buf, me)
		if !slices.Equal(buf, o) {
			tb.Fatalf("WriteObservation(%d) differs from ObservationTensor(%d)", me, me)
		}
		for _, sec := range l.Sections {
			for i, v := range o[sec.Offset : sec.Offset+sec.Size()] {
				if int(v) < sec.Min || int(v) > sec.Max {
					tb.Fatalf("ObservationTensor(%d) %s[%d] = %d, outside %d..%d", me, sec.Name, i, v, sec.Min, sec.Max)
				}
			}
		}
		section := func(name string) []uint8 {
			sec, ok := l.Section(name)
			if !ok {
				return nil
			}
			return o[sec.Offset : sec.Offset+sec.Size()]
		}
		seatAt := func(j int) int { return (me + j) % p }
		rel := func(seat int) int { return (seat - me + p) % p }

		want := make([]uint8, card.NumActions)
		for _, c := range s.Hand(me) {
			want[c] = 1
		}
		if got := section("hand"); !slices.Equal(got, want) {
			tb.Fatalf("ObservationTensor(%d) hand = %v, want %v", me, got, want)
		}
		wantTrick := make([]uint8, p*card.NumActions)
		for i, c := range trick {
			wantTrick[rel((leader+i)%p)*card.NumActions+int(c)] = 1
		}
		if got := section("current_trick"); !slices.Equal(got, wantTrick) {
			tb.Fatalf("ObservationTensor(%d) current_trick = %v, want %v (trick %v led by %d)", me, got, wantTrick, names(trick), leader)
		}
		wantCounts := make([]uint8, p*card.NumColours)
		wantPrizes := make([]uint8, p*card.NumActions)
		wantVoids := make([]uint8, p*card.NumColours)
		wantTotals := make([]uint8, 2*p)
		totals := s.Totals()
		for j := range p {
			for _, c := range s.Prizes(seatAt(j)) {
				wantCounts[j*card.NumColours+card.Colour(c)]++
				wantPrizes[j*card.NumActions+int(c)] = 1
			}
			for c := range card.NumColours {
				if s.Voids(seatAt(j))&(1<<c) != 0 {
					wantVoids[j*card.NumColours+c] = 1
				}
			}
			wantTotals[2*j] = uint8(totals[seatAt(j)] / card.TotalScale)
			wantTotals[2*j+1] = uint8(totals[seatAt(j)] % card.TotalScale)
		}
		if got := section("prize_counts"); !slices.Equal(got, wantCounts) {
			tb.Fatalf("ObservationTensor(%d) prize_counts = %v, want %v", me, got, wantCounts)
		}
		optional := []struct {
			name string
			want []uint8
		}{
			{"prizes", wantPrizes},
			{"voids", wantVoids},
			{"totals", wantTotals},
		}
		oneHot := func(n, i int) []uint8 {
			out := make([]uint8, n)
			if i >= 0 {
				out[i] = 1
			}
			return out
		}
		leadColour := -1
		if len(trick) > 0 {
			leadColour = card.Colour(trick[0])
		}
		optional = append(optional,
			struct {
				name string
				want []uint8
			}{"lead_colour", oneHot(card.NumColours, leadColour)},
			struct {
				name string
				want []uint8
			}{"leader", oneHot(p, rel(leader))},
			struct {
				name string
				want []uint8
			}{"trick_position", oneHot(p, len(trick))},
			struct {
				name string
				want []uint8
			}{"tricks_left", []uint8{uint8(card.TricksPerDeal - s.TricksDone())}},
			struct {
				name string
				want []uint8
			}{"deal_index", []uint8{uint8(s.DealIndex())}},
			struct {
				name string
				want []uint8
			}{"deals_left", []uint8{uint8(g.Params().Deals - s.DealIndex() - 1)}},
		)
		for _, sec := range optional {
			if got := section(sec.name); got != nil && !slices.Equal(got, sec.want) {
				tb.Fatalf("ObservationTensor(%d) %s = %v, want %v\n%s", me, sec.name, got, sec.want, s)
			}
		}
	}
}

// checkResample resamples the hidden cards for every seat and checks the
// world agrees with what that seat knows and plays on legally to the end.
func checkResample(tb testing.TB, s *card.State, rng *env.RNG) {
	tb.Helper()
	g := s.Game()
	p := g.NumPlayers()
	text := s.Serialize()
	trick, leader := s.Trick()
	for me := range p {
		r := s.ResampleFromInfostate(me, rng)
		if s.Serialize() != text {
			tb.Fatalf("ResampleFromInfostate(%d) changed the state", me)
		}
		rt, rl := r.Trick()
		if !slices.Equal(rt, trick) || rl != leader || r.CurrentPlayer() != s.CurrentPlayer() ||
			r.DealIndex() != s.DealIndex() || r.TricksDone() != s.TricksDone() || r.Dealer() != s.Dealer() ||
			!slices.Equal(r.Totals(), s.Totals()) || r.IsTerminal() != s.IsTerminal() {
			tb.Fatalf("ResampleFromInfostate(%d) changed public facts:\n%s\nwant\n%s", me, r, s)
		}
		if !slices.Equal(r.Hand(me), s.Hand(me)) {
			tb.Fatalf("ResampleFromInfostate(%d) own hand = %v, want %v", me, names(r.Hand(me)), names(s.Hand(me)))
		}
		var unseen, runseen cardSet
		for seat := range p {
			if !slices.Equal(r.Prizes(seat), s.Prizes(seat)) || r.Voids(seat) != s.Voids(seat) {
				tb.Fatalf("ResampleFromInfostate(%d) seat %d prizes/voids changed", me, seat)
			}
			if len(r.Hand(seat)) != len(s.Hand(seat)) {
				tb.Fatalf("ResampleFromInfostate(%d) seat %d holds %d cards, want %d", me, seat, len(r.Hand(seat)), len(s.Hand(seat)))
			}
			if seat == me {
				continue
			}
			for _, c := range r.Hand(seat) {
				if r.Voids(seat)&(1<<card.Colour(c)) != 0 {
					tb.Fatalf("ResampleFromInfostate(%d) gave seat %d %s, a colour it is void in", me, seat, card.CardString(c))
				}
			}
			unseen = unseen.union(setOf(s.Hand(seat)))
			runseen = runseen.union(setOf(r.Hand(seat)))
		}
		if unseen != runseen {
			tb.Fatalf("ResampleFromInfostate(%d) other hands hold %v, want %v", me, runseen, unseen)
		}
		if !slices.Equal(r.ObservationTensor(me), s.ObservationTensor(me)) {
			tb.Fatalf("ResampleFromInfostate(%d) changed seat %d's observation", me, me)
		}
		// The world's record must replay: its hands explain every play so far.
		rtext := r.Serialize()
		if d, err := g.DeserializeState(rtext); err != nil {
			tb.Fatalf("DeserializeState of a resampled state: error = %v\n%s", err, rtext)
		} else if d.Serialize() != rtext {
			tb.Fatalf("resampled state does not round-trip")
		}
		if me == s.CurrentPlayer() || me == 0 {
			conformancePlayout(tb, r, rng, 0)
		}
	}
}

func TestConformance(t *testing.T) {
	cases := []struct {
		params card.Params
		seeds  []uint64
	}{
		{card.Params{Players: 3}, []uint64{1, 2}},
		{card.Params{Players: 3, Deals: 1, FirstDealer: 2}, []uint64{3, 4, 5}},
		{card.Params{Players: 4}, []uint64{1, 2}},
		{card.Params{Players: 4, Deals: 2, FirstDealer: 3}, []uint64{7}},
		{card.Params{Players: 5, FirstDealer: 1}, []uint64{1}},
		{card.Params{Players: 5, Deals: 1, FirstDealer: 4}, []uint64{8, 9}},
		{card.Params{Players: 6}, []uint64{1}},
		{card.Params{Players: 6, Deals: 2, FirstDealer: 5}, []uint64{10, 11}},
	}
	long := os.Getenv("DG_LONG") == "1" // many more seeds, for a nightly run
	for _, tc := range cases {
		seeds := tc.seeds
		if long {
			for s := range uint64(40) {
				seeds = append(seeds, 1000+s)
			}
		}
		for _, seed := range seeds {
			name := fmt.Sprintf("random play with players=%d deals=%d first_dealer=%d seed=%d keeps every invariant",
				tc.params.Players, tc.params.Deals, tc.params.FirstDealer, seed)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				g := newGame(t, tc.params)
				s := g.NewInitialState(seed)
				rng := env.NewRNG(seed, 77)
				// About a dozen deep checks a game: each one plays the rest out several times.
				st := conformancePlayout(t, s, &rng, max(23, g.MaxGameLength()/12))
				if st.deep < 3 {
					t.Errorf("only %d deep checks ran", st.deep)
				}
			})
		}
	}
}
