package card_test

// The rules, example by example and rule by rule: the texts' worked
// examples, every tie case, the deck per player count, dealing and leading,
// scoring, parameters, ids and the illegal-action contract.

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
)

// The rulebook's 5-player example trick, played through a real State.
func TestRulebookTrickExample(t *testing.T) {
	const andreas, ben, clara, dennis, emma = 0, 1, 2, 3, 4
	hands := craftDeal(t, 5, map[int][]card.Card{
		andreas: cards(t, "green 4"),
		ben:     cards(t, "green 12"),
		clara:   cards(t, "green 7"),
		dennis:  cards(t, "red 2"),
		emma:    cards(t, "green 2"),
	}, map[int][]int{2: {dennis}}) // Dennis has no green card
	// Emma (seat 4) deals, so Andreas, on her left, leads the first trick.
	g := newGame(t, card.Params{Players: 5, Deals: 1, FirstDealer: emma})
	s, err := g.NewStateFromDeals(42, hands)
	if err != nil {
		t.Fatalf("NewStateFromDeals error = %v", err)
	}
	if got := s.CurrentPlayer(); got != andreas {
		t.Fatalf("CurrentPlayer() = %d, want Andreas (%d)", got, andreas)
	}
	for _, c := range s.Hand(dennis) {
		if card.Colour(c) == 2 {
			t.Fatalf("Dennis holds %s, want no green", card.CardString(c))
		}
	}

	t.Run("the others must follow green and Dennis may play anything", func(t *testing.T) {
		s := s.Clone()
		mustApply(t, s, parseCard(t, "green 4"))
		for _, a := range s.LegalActions() {
			if card.Colour(card.Card(a)) != 2 {
				t.Errorf("Ben may play %s, want green only", card.CardString(card.Card(a)))
			}
		}
		mustApply(t, s, cards(t, "green 12", "green 7")...)
		if got, want := s.LegalActions(), toActions(s.Hand(dennis)); !slices.Equal(got, want) {
			t.Errorf("Dennis's legal actions = %v, want his whole hand %v", got, want)
		}
	})

	mustApply(t, s, cards(t, "green 4", "green 12", "green 7", "red 2", "green 2")...)
	t.Run("Emma plays the later 2 so takes Ben's green 12", func(t *testing.T) {
		if got, want := s.Prizes(emma), cards(t, "green 12"); !slices.Equal(got, want) {
			t.Errorf("Emma's prizes = %v, want %v", names(got), names(want))
		}
	})
	t.Run("Ben takes the other four cards, red 2 and green 2 included", func(t *testing.T) {
		want := cards(t, "red 2", "green 2", "green 4", "green 7")
		if got := s.Prizes(ben); !slices.Equal(got, want) {
			t.Errorf("Ben's prizes = %v, want %v", names(got), names(want))
		}
		for _, seat := range []int{andreas, clara, dennis} {
			if got := s.Prizes(seat); len(got) != 0 {
				t.Errorf("seat %d prizes = %v, want none", seat, names(got))
			}
		}
	})
	t.Run("Ben leads the next trick", func(t *testing.T) {
		if got := s.CurrentPlayer(); got != ben {
			t.Errorf("CurrentPlayer() = %d, want Ben (%d)", got, ben)
		}
		if _, leader := s.Trick(); leader != ben {
			t.Errorf("leader = %d, want Ben (%d)", leader, ben)
		}
		if got := s.TricksDone(); got != 1 {
			t.Errorf("TricksDone() = %d, want 1", got)
		}
	})
	t.Run("Dennis's red 2 shows he is void in green and nobody else is void", func(t *testing.T) {
		for seat := range 5 {
			want := uint8(0)
			if seat == dennis {
				want = 1 << 2
			}
			if got := s.Voids(seat); got != want {
				t.Errorf("Voids(%d) = %05b, want %05b", seat, got, want)
			}
		}
	})
}

func toActions(cs []card.Card) []card.Action {
	out := make([]card.Action, len(cs))
	for i, c := range cs {
		out[i] = card.Action(c)
	}
	return out
}

func TestScoringExamples(t *testing.T) {
	tests := []struct {
		name  string
		cards []string
		want  int
	}{
		{"Dennis's pile from the rulebook scores 52", []string{
			"red 4", "red 10", "red 11", "yellow 8", "green 5", "green 9",
			"blue 2", "blue 3", "blue 6", "blue 10", "blue 12", "purple 10", "purple 12"}, 52},
		// The German text prints 84, but its own sum is 3+15+31+9+27 = 85 (RULES.md).
		{"the German example scores 85, not the printed 84", []string{
			"blue 1", "blue 2", "blue 3", "red 15", "yellow 18", "yellow 13",
			"green 1", "green 2", "green 3", "green 4", "green 5", "green 6", "green 7", "green 8", "green 9",
			"purple 16", "purple 11"}, 85},
		{"no cards score 0", nil, 0},
		{"one card scores its value", []string{"purple 17"}, 17},
		{"two cards of a colour score their values", []string{"red 18", "red 17"}, 35},
		{"three cards of a colour score one each", []string{"red 18", "red 17", "red 16"}, 3},
		{"colours are scored separately", []string{"red 18", "red 17", "red 16", "blue 9", "green 1", "green 2"}, 3 + 9 + 3},
		{"all eighteen cards of a colour score 18", []string{
			"red 1", "red 2", "red 3", "red 4", "red 5", "red 6", "red 7", "red 8", "red 9",
			"red 10", "red 11", "red 12", "red 13", "red 14", "red 15", "red 16", "red 17", "red 18"}, 18},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := cards(t, tc.cards...)
			if got := card.ScoreCards(cs); got != tc.want {
				t.Errorf("ScoreCards(%v) = %d, want %d", tc.cards, got, tc.want)
			}
			if got := refScore(cs); got != tc.want {
				t.Fatalf("test's reference score = %d, want %d", got, tc.want)
			}
			var pile [card.NumColours]uint32
			for _, c := range cs {
				pile[card.Colour(c)] |= 1 << (card.Value(c) - 1)
			}
			if got := card.Score(&pile); got != tc.want {
				t.Errorf("Score(%v) = %d, want %d", pile, got, tc.want)
			}
			sum := 0
			for _, m := range pile {
				sum += card.ColourScore(m)
			}
			if sum != tc.want {
				t.Errorf("sum of ColourScore = %d, want %d", sum, tc.want)
			}
		})
	}
	t.Run("the rulebook's per-colour lines for Dennis", func(t *testing.T) {
		lines := []struct {
			values []int
			want   int
		}{{[]int{4, 10, 11}, 3}, {[]int{8}, 8}, {[]int{5, 9}, 14}, {[]int{2, 3, 6, 10, 12}, 5}, {[]int{10, 12}, 22}}
		for _, l := range lines {
			var m uint32
			for _, v := range l.values {
				m |= 1 << (v - 1)
			}
			if got := card.ColourScore(m); got != l.want {
				t.Errorf("ColourScore(%v) = %d, want %d", l.values, got, l.want)
			}
		}
	})
}

// TestTrickResolution plays each trick through a real State and checks who
// takes what and who leads next, against hand-written expectations.
func TestTrickResolution(t *testing.T) {
	tests := []struct {
		name    string
		trick   []string
		hi, lo  int // positions in play order
		players int
	}{
		{"the highest value wins regardless of colour", []string{"red 3", "red 5", "blue 9", "red 1"}, 2, 3, 4},
		{"the lowest value is lowest regardless of colour", []string{"red 3", "red 5", "red 9", "blue 1"}, 2, 3, 4},
		{"an off-colour card can be the highest and take the rest", []string{"green 2", "green 3", "purple 9"}, 2, 0, 3},
		{"the leader can hold the lowest card", []string{"yellow 1", "yellow 7", "yellow 4", "yellow 8"}, 3, 0, 4},
		{"the leader can hold the highest card", []string{"yellow 15", "yellow 7", "yellow 4", "yellow 8", "yellow 3"}, 0, 4, 5},
		{"on a tie for highest the later card is highest", []string{"red 9", "blue 9", "red 2", "red 5"}, 1, 2, 4},
		{"on a tie for highest the last of three equal cards is highest", []string{"red 9", "blue 9", "red 2", "green 9", "red 4"}, 3, 2, 5},
		{"on a tie for lowest the later card is lowest", []string{"red 2", "red 8", "blue 2", "red 5"}, 1, 2, 4},
		{"on ties for both the later cards count", []string{"red 2", "red 8", "blue 2", "blue 8", "green 5", "yellow 2"}, 3, 5, 6},
		{"two values only: last high and last low", []string{"red 4", "blue 4", "red 6", "green 6"}, 3, 1, 4},
		{"the rulebook trick", []string{"green 4", "green 12", "green 7", "red 2", "green 2"}, 1, 4, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			trick := cards(t, tc.trick...)
			checkTrick(t, tc.players, trick, tc.hi, tc.lo)
		})
	}
}

// checkTrick plays trick through a crafted deal and checks the prizes,
// the leader and card.TrickWinners.
func checkTrick(t *testing.T, players int, trick []card.Card, hi, lo int) {
	t.Helper()
	if gh, gl := card.TrickWinners(trick); gh != hi || gl != lo {
		t.Errorf("TrickWinners(%v) = (%d, %d), want (%d, %d)", names(trick), gh, gl, hi, lo)
	}
	if rh, rl := refTrick(trick); rh != hi || rl != lo {
		t.Fatalf("test's refTrick(%v) = (%d, %d), want (%d, %d)", names(trick), rh, rl, hi, lo)
	}
	s, leader := stateForTrick(t, players, trick)
	mustApply(t, s, trick...)
	hiSeat, loSeat := (leader+hi)%players, (leader+lo)%players
	if got, want := s.Prizes(loSeat), []card.Card{trick[hi]}; !slices.Equal(got, want) {
		t.Errorf("lowest seat %d prizes = %v, want only the highest card %v", loSeat, names(got), names(want))
	}
	var rest []card.Card
	for i, c := range trick {
		if i != hi {
			rest = append(rest, c)
		}
	}
	slices.Sort(rest)
	if got := s.Prizes(hiSeat); !slices.Equal(got, rest) {
		t.Errorf("highest seat %d prizes = %v, want the rest %v", hiSeat, names(got), names(rest))
	}
	for seat := range players {
		if seat != hiSeat && seat != loSeat && len(s.Prizes(seat)) != 0 {
			t.Errorf("seat %d prizes = %v, want none", seat, names(s.Prizes(seat)))
		}
	}
	if got := s.CurrentPlayer(); got != hiSeat {
		t.Errorf("CurrentPlayer() after the trick = %d, want the highest seat %d", got, hiSeat)
	}
}

func TestAllEqualTrick(t *testing.T) {
	colours := []string{"red", "yellow", "green", "blue", "purple"}
	for players := card.MinPlayers; players <= card.MaxPlayers; players++ {
		t.Run(fmt.Sprintf("with %d players the last card is highest and the second to last lowest", players), func(t *testing.T) {
			// Only five cards share a value, so six players can never play an
			// all-equal trick; TrickWinners still has to answer it.
			trick := make([]card.Card, players)
			for i := range trick {
				trick[i] = parseCard(t, fmt.Sprintf("%s 7", colours[i%card.NumColours]))
			}
			if hi, lo := card.TrickWinners(trick); hi != players-1 || lo != players-2 {
				t.Errorf("TrickWinners(%v) = (%d, %d), want (%d, %d)", names(trick), hi, lo, players-1, players-2)
			}
			if players > card.NumColours {
				return
			}
			checkTrick(t, players, trick, players-1, players-2)
		})
	}
}

func TestTrickWinnersMatchesReference(t *testing.T) {
	rng := env.NewRNG(5, 5)
	for i := range 20000 {
		players := card.MinPlayers + i%4
		trick := make([]card.Card, players)
		for j := range trick {
			trick[j] = card.Card(rng.IntN(card.NumActions))
			if i%3 == 0 { // crowd the values so ties are common
				trick[j] = card.CardID(rng.IntN(card.NumColours), 1+rng.IntN(3))
			}
		}
		h, l := card.TrickWinners(trick)
		rh, rl := refTrick(trick)
		if h != rh || l != rl {
			t.Fatalf("TrickWinners(%v) = (%d, %d), want (%d, %d)", names(trick), h, l, rh, rl)
		}
	}
}

func TestFollowColour(t *testing.T) {
	// Seat 1 leads (dealer 0); seat 2 holds reds, seat 3 none.
	hands := craftDeal(t, 4, map[int][]card.Card{
		1: cards(t, "red 5"),
		2: cards(t, "red 6", "blue 1", "purple 12"),
		3: cards(t, "green 1", "blue 12"),
	}, map[int][]int{0: {3}})
	g := newGame(t, card.Params{Players: 4, Deals: 1})
	s, err := g.NewStateFromDeals(1, hands)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("the leader may play any card", func(t *testing.T) {
		if got, want := s.LegalActions(), toActions(s.Hand(1)); !slices.Equal(got, want) {
			t.Errorf("LegalActions() = %v, want the whole hand %v", got, want)
		}
	})
	mustApply(t, s, parseCard(t, "red 5"))
	t.Run("a seat holding the lead colour must follow it", func(t *testing.T) {
		var want []card.Action
		for _, c := range s.Hand(2) {
			if card.Colour(c) == 0 {
				want = append(want, card.Action(c))
			}
		}
		if got := s.LegalActions(); !slices.Equal(got, want) || len(want) == 0 {
			t.Errorf("LegalActions() = %v, want the reds %v", got, want)
		}
		err := s.ApplyAction(card.Action(parseCard(t, "blue 1")))
		if !errors.Is(err, card.ErrIllegalAction) {
			t.Errorf("ApplyAction(blue 1) while holding red: error = %v, want ErrIllegalAction", err)
		}
	})
	mustApply(t, s, parseCard(t, "red 6"))
	t.Run("a seat void in the lead colour may play any card", func(t *testing.T) {
		if got, want := s.LegalActions(), toActions(s.Hand(3)); !slices.Equal(got, want) {
			t.Errorf("LegalActions() = %v, want the whole hand %v", got, want)
		}
		if s.Voids(3) != 0 {
			t.Errorf("Voids(3) = %05b before seat 3 failed to follow, want 0", s.Voids(3))
		}
		mustApply(t, s, parseCard(t, "blue 12"))
		if s.Voids(3) != 1 {
			t.Errorf("Voids(3) = %05b after not following red, want 00001", s.Voids(3))
		}
	})
}

func TestDeckPerPlayerCount(t *testing.T) {
	for _, tc := range []struct{ players, top int }{{3, 9}, {4, 12}, {5, 15}, {6, 18}} {
		t.Run(fmt.Sprintf("%d players use values 1 to %d and get 15 cards each", tc.players, tc.top), func(t *testing.T) {
			if got := card.DeckValues(tc.players); got != tc.top {
				t.Errorf("DeckValues(%d) = %d, want %d", tc.players, got, tc.top)
			}
			for c := range card.NumActions {
				want := card.Value(card.Card(c)) <= tc.top
				if got := card.InDeck(card.Card(c), tc.players); got != want {
					t.Errorf("InDeck(%s, %d) = %v, want %v", card.CardString(card.Card(c)), tc.players, got, want)
				}
			}
			if n := len(deck(tc.players)); n != 15*tc.players {
				t.Fatalf("deck has %d cards, want %d", n, 15*tc.players)
			}
			g := newGame(t, card.Params{Players: tc.players})
			for seed := range uint64(20) {
				s := g.NewInitialState(seed)
				var all cardSet
				for seat := range tc.players {
					h := s.Hand(seat)
					if len(h) != card.HandSize {
						t.Fatalf("seed %d: seat %d holds %d cards, want 15", seed, seat, len(h))
					}
					all = all.union(setOf(h))
				}
				if all != setOf(deck(tc.players)) {
					t.Fatalf("seed %d: the deal is %v, want the deck", seed, all)
				}
				// Cards outside the deck are never legal: play the game out.
				for !s.IsTerminal() {
					for a := range card.NumActions {
						if s.IsLegal(a) && !card.InDeck(card.Card(a), tc.players) {
							t.Fatalf("IsLegal(%d) = true for a card outside the deck", a)
						}
					}
					mustApply(t, s, card.Card(s.LegalActions()[0]))
				}
			}
		})
	}
	t.Run("a deal with a card outside the deck is refused", func(t *testing.T) {
		g := newGame(t, card.Params{Players: 3, Deals: 1})
		hands := craftDeal(t, 3, nil, nil)
		hands[0][0] = parseCard(t, "red 10")
		if _, err := g.NewStateFromDeals(1, hands); err == nil {
			t.Errorf("NewStateFromDeals with red 10 in a 3-player deal: error = nil, want one")
		}
	})
	t.Run("a deal with a card twice or a short hand is refused", func(t *testing.T) {
		g := newGame(t, card.Params{Players: 3, Deals: 1})
		hands := craftDeal(t, 3, nil, nil)
		hands[1][0] = hands[0][0]
		if _, err := g.NewStateFromDeals(1, hands); err == nil {
			t.Errorf("a card dealt twice: error = nil, want one")
		}
		hands = craftDeal(t, 3, nil, nil)
		hands[2] = hands[2][:14]
		if _, err := g.NewStateFromDeals(1, hands); err == nil {
			t.Errorf("a 14-card hand: error = nil, want one")
		}
		if _, err := g.NewStateFromDeals(1, craftDeal(t, 3, nil, nil), craftDeal(t, 3, nil, nil)); err == nil {
			t.Errorf("two deals for a one-deal game: error = nil, want one")
		}
	})
}

func TestDealersAndLeaders(t *testing.T) {
	for players := card.MinPlayers; players <= card.MaxPlayers; players++ {
		for first := range players {
			t.Run(fmt.Sprintf("players=%d first_dealer=%d: deal k is dealt by first+k and led from its left", players, first), func(t *testing.T) {
				deals := players + 1
				g := newGame(t, card.Params{Players: players, Deals: deals, FirstDealer: first})
				s := g.NewInitialState(uint64(players*10 + first))
				rng := env.NewRNG(1, uint64(first))
				for k := range deals {
					dealer := (first + k) % players
					if s.DealIndex() != k || s.Dealer() != dealer {
						t.Fatalf("DealIndex() = %d, Dealer() = %d, want %d, %d", s.DealIndex(), s.Dealer(), k, dealer)
					}
					if got := s.CurrentPlayer(); got != (dealer+1)%players {
						t.Fatalf("deal %d: first CurrentPlayer() = %d, want %d", k, got, (dealer+1)%players)
					}
					for trick := range card.TricksPerDeal {
						if s.TricksDone() != trick || s.DealIndex() != k {
							t.Fatalf("deal %d trick %d: TricksDone() = %d, DealIndex() = %d", k, trick, s.TricksDone(), s.DealIndex())
						}
						for range players {
							mustApply(t, s, card.Card(randomAction(&rng, s.LegalActions())))
						}
					}
				}
				if !s.IsTerminal() || s.CurrentPlayer() != env.TerminalPlayer {
					t.Fatalf("after %d deals: IsTerminal() = %v, CurrentPlayer() = %d, want true, %d", deals, s.IsTerminal(), s.CurrentPlayer(), env.TerminalPlayer)
				}
				if len(s.History()) != g.MaxGameLength() || g.MaxGameLength() != deals*15*players {
					t.Fatalf("len(History()) = %d, MaxGameLength() = %d, want %d", len(s.History()), g.MaxGameLength(), deals*15*players)
				}
			})
		}
	}
}

func TestRewardsAndTotals(t *testing.T) {
	g := newGame(t, card.Params{Players: 4, Deals: 3})
	s := g.NewInitialState(9)
	rng := env.NewRNG(9, 9)
	sum := make([]float64, 4)
	var dealEnds []int
	step := 0
	for !s.IsTerminal() {
		deal := s.DealIndex()
		mustApply(t, s, card.Card(randomAction(&rng, s.LegalActions())))
		step++
		r := s.Rewards()
		ended := s.IsTerminal() || s.DealIndex() != deal
		for i, x := range r {
			if !ended && x != 0 {
				t.Fatalf("Step(%d) reward[%d] = %v, want 0 in the middle of a deal", step, i, x)
			}
			sum[i] += x
		}
		if ended {
			dealEnds = append(dealEnds, step)
			rec := s.Record()
			for i, x := range r {
				if want := float64(rec.Deals[deal].Scores[i]); x != want {
					t.Fatalf("Step(%d) reward[%d] = %v, want the deal score %v", step, i, x, want)
				}
			}
		}
	}
	if want := []int{60, 120, 180}; !slices.Equal(dealEnds, want) {
		t.Errorf("rewards came at steps %v, want %v", dealEnds, want)
	}
	if got := s.Returns(); !slices.Equal(got, sum) {
		t.Errorf("Returns() = %v, want the summed rewards %v", got, sum)
	}
	tot := s.Totals()
	rec := s.Record()
	if rt := rec.Totals(); !slices.Equal(rt, tot) {
		t.Errorf("Record().Totals() = %v, want %v", rt, tot)
	}
	for i := range tot {
		if float64(tot[i]) != sum[i] {
			t.Errorf("Totals()[%d] = %d, want %v", i, tot[i], sum[i])
		}
	}
	t.Run("the last deal's prizes score its rewards", func(t *testing.T) {
		for seat := range 4 {
			if got, want := s.DealScore(seat), card.ScoreCards(s.Prizes(seat)); got != want || float64(got) != s.Rewards()[seat] {
				t.Errorf("DealScore(%d) = %d, ScoreCards(prizes) = %d, Rewards() = %v", seat, got, want, s.Rewards()[seat])
			}
		}
	})
}

func TestWinners(t *testing.T) {
	tests := []struct {
		name   string
		totals []int
		want   []int
	}{
		{"the single highest total wins", []int{10, 30, 20, 5}, []int{1}},
		{"a tie for first shares the win", []int{30, 10, 30, 5}, []int{0, 2}},
		{"all equal totals all win", []int{7, 7, 7}, []int{0, 1, 2}},
		{"a tie below the top does not win", []int{9, 9, 12, 1, 1}, []int{2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The reference rule itself; real games are checked against it below.
			if got := winnersOf(tc.totals); !slices.Equal(got, tc.want) {
				t.Fatalf("reference winners(%v) = %v, want %v", tc.totals, got, tc.want)
			}
		})
	}
	t.Run("Winners matches the totals on finished games", func(t *testing.T) {
		ties := 0
		for seed := range uint64(300) {
			players := card.MinPlayers + int(seed%4)
			g := newGame(t, card.Params{Players: players, Deals: 1})
			s := g.NewInitialState(seed)
			rng := env.NewRNG(seed, 3)
			playToEnd(t, s, &rng)
			want := winnersOf(s.Totals())
			if got := s.Winners(); !slices.Equal(got, want) {
				t.Fatalf("seed %d: Winners() = %v for totals %v, want %v", seed, got, s.Totals(), want)
			}
			if len(want) > 1 {
				ties++
			}
		}
		t.Logf("%d of 300 games were shared wins", ties)
	})
}

func winnersOf(totals []int) []int {
	best := slices.Max(totals)
	var w []int
	for i, x := range totals {
		if x == best {
			w = append(w, i)
		}
	}
	return w
}

func TestParams(t *testing.T) {
	valid := []struct {
		name string
		in   card.Params
		want card.Params
	}{
		{"deals default to the number of players", card.Params{Players: 5}, card.Params{Players: 5, Deals: 5}},
		{"three players is the minimum", card.Params{Players: 3, Deals: 1}, card.Params{Players: 3, Deals: 1}},
		{"six players is the maximum", card.Params{Players: 6, Deals: card.MaxDeals, FirstDealer: 5}, card.Params{Players: 6, Deals: card.MaxDeals, FirstDealer: 5}},
	}
	for _, tc := range valid {
		t.Run(tc.name, func(t *testing.T) {
			g, err := card.NewGame(tc.in)
			if err != nil {
				t.Fatalf("NewGame(%+v) error = %v", tc.in, err)
			}
			if got := g.Params(); got != tc.want {
				t.Errorf("Params() = %+v, want %+v", got, tc.want)
			}
		})
	}
	if d := card.DefaultParams(); d.Players != 4 || (d.Deals != 4 && d.Deals != 0) || d.FirstDealer != 0 {
		t.Errorf("DefaultParams() = %+v, want 4 players, 4 deals, first dealer 0", d)
	}
	invalid := []struct {
		name string
		in   card.Params
		bad  string
	}{
		{"two players are too few", card.Params{Players: 2}, "players"},
		{"seven players are too many", card.Params{Players: 7}, "players"},
		{"zero players are refused", card.Params{}, "players"},
		{"negative deals are refused", card.Params{Players: 4, Deals: -1}, "deals"},
		{"more deals than MaxDeals are refused", card.Params{Players: 4, Deals: card.MaxDeals + 1}, "deals"},
		{"a negative first dealer is refused", card.Params{Players: 4, FirstDealer: -1}, "first_dealer"},
		{"a first dealer beyond the last seat is refused", card.Params{Players: 4, FirstDealer: 4}, "first_dealer"},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			_, err := card.NewGame(tc.in)
			var pe *card.ParamError
			if !errors.As(err, &pe) {
				t.Fatalf("NewGame(%+v) error = %v, want a *ParamError", tc.in, err)
			}
			if pe.Name != tc.bad {
				t.Errorf("NewGame(%+v) error names %q, want %q", tc.in, pe.Name, tc.bad)
			}
			if !errors.Is(err, card.ErrParams) {
				t.Errorf("NewGame(%+v) error does not wrap ErrParams", tc.in)
			}
		})
	}
	parse := []struct {
		name string
		in   map[string]any
		want card.Params
		bad  string
	}{
		{"an empty map gives the defaults", map[string]any{}, card.Params{Players: 4, Deals: 4}, ""},
		{"JSON numbers are accepted", map[string]any{"players": 3.0, "deals": 2.0, "first_dealer": 1.0}, card.Params{Players: 3, Deals: 2, FirstDealer: 1}, ""},
		{"deals follow the given players", map[string]any{"players": 6}, card.Params{Players: 6, Deals: 6}, ""},
		{"an unknown parameter is an error naming it", map[string]any{"players": 4, "deal": 3}, card.Params{}, "deal"},
		{"a fractional number is refused", map[string]any{"players": 4.5}, card.Params{}, "players"},
		{"a string is refused", map[string]any{"players": "4"}, card.Params{}, "players"},
		{"deals of zero given explicitly are refused", map[string]any{"deals": 0}, card.Params{}, "deals"},
		{"an out-of-range first dealer is refused", map[string]any{"players": 3, "first_dealer": 3}, card.Params{}, "first_dealer"},
		{"a huge number is refused, not wrapped", map[string]any{"players": float64(1 << 40)}, card.Params{}, "players"},
		{"a huge int64 is refused, not wrapped", map[string]any{"deals": int64(1<<32 + 4)}, card.Params{}, "deals"},
	}
	for _, tc := range parse {
		t.Run("ParseParams: "+tc.name, func(t *testing.T) {
			got, err := card.ParseParams(tc.in)
			if tc.bad == "" {
				if err != nil || got != tc.want {
					t.Fatalf("ParseParams(%v) = %+v, %v, want %+v, nil", tc.in, got, err, tc.want)
				}
				return
			}
			var pe *card.ParamError
			if !errors.As(err, &pe) {
				t.Fatalf("ParseParams(%v) error = %v, want a *ParamError", tc.in, err)
			}
			if pe.Name != tc.bad {
				t.Errorf("ParseParams(%v) error names %q, want %q", tc.in, pe.Name, tc.bad)
			}
		})
	}
}

func TestCardIDs(t *testing.T) {
	colours := []string{"red", "yellow", "green", "blue", "purple"}
	t.Run("a card id is colour*18 + value-1 and names round-trip", func(t *testing.T) {
		for c, name := range colours {
			if card.ColourNames[c] != name {
				t.Errorf("ColourNames[%d] = %q, want %q", c, card.ColourNames[c], name)
			}
			for v := 1; v <= 18; v++ {
				id := card.Card(c*18 + v - 1)
				if got := card.CardID(c, v); got != id {
					t.Errorf("CardID(%d, %d) = %d, want %d", c, v, got, id)
				}
				if card.Colour(id) != c || card.Value(id) != v {
					t.Errorf("Colour, Value(%d) = %d, %d, want %d, %d", id, card.Colour(id), card.Value(id), c, v)
				}
				s := fmt.Sprintf("%s %d", name, v)
				if got := card.CardString(id); got != s {
					t.Errorf("CardString(%d) = %q, want %q", id, got, s)
				}
				for _, in := range []string{s, fmt.Sprintf("%c%d", name[0], v), fmt.Sprintf(" %c%d ", name[0]-32, v), fmt.Sprint(int(id))} {
					if got, err := card.ParseCard(in); err != nil || got != id {
						t.Errorf("ParseCard(%q) = %d, %v, want %d", in, got, err, id)
					}
				}
			}
		}
	})
	t.Run("the rulebook's green 12 is id 47", func(t *testing.T) {
		if got := parseCard(t, "green 12"); got != 47 {
			t.Errorf("ParseCard(green 12) = %d, want 47", got)
		}
		if got := card.CardString(47); got != "green 12" {
			t.Errorf("CardString(47) = %q, want %q", got, "green 12")
		}
	})
	t.Run("bad card names are errors, never panics", func(t *testing.T) {
		for _, in := range []string{"", " ", "green", "green 0", "green 19", "g", "x5", "90", "-1", "red -3", "blue 1.5", "orange 3"} {
			if got, err := card.ParseCard(in); err == nil {
				t.Errorf("ParseCard(%q) = %d, nil, want an error", in, got)
			}
		}
	})
	if card.NumActions != 90 || card.NumColours != 5 || card.MaxValue != 18 || card.HandSize != 15 || card.TricksPerDeal != 15 {
		t.Errorf("constants NumActions %d NumColours %d MaxValue %d HandSize %d TricksPerDeal %d, want 90 5 18 15 15",
			card.NumActions, card.NumColours, card.MaxValue, card.HandSize, card.TricksPerDeal)
	}
	g := newGame(t, card.Params{Players: 3})
	if g.NumDistinctActions() != 90 {
		t.Errorf("NumDistinctActions() = %d, want 90", g.NumDistinctActions())
	}
}

func TestIllegalAction(t *testing.T) {
	g := newGame(t, card.Params{Players: 4, Deals: 1})
	s := g.NewInitialState(3)
	rng := env.NewRNG(3, 3)
	for range 6 { // into the second trick, with a lead colour to follow
		mustApply(t, s, card.Card(randomAction(&rng, s.LegalActions())))
	}
	legal := s.LegalActions()
	var notLegal []int
	for a := range card.NumActions {
		if !slices.Contains(legal, a) {
			notLegal = append(notLegal, a)
		}
	}
	notLegal = append(notLegal, -1, card.NumActions, 1<<20)
	before := s.Serialize()
	for _, a := range notLegal {
		t.Run(fmt.Sprintf("action %d is refused and changes nothing", a), func(t *testing.T) {
			err := s.ApplyAction(a)
			if !errors.Is(err, card.ErrIllegalAction) {
				t.Fatalf("ApplyAction(%d) error = %v, want ErrIllegalAction", a, err)
			}
			var ie *card.IllegalActionError
			if !errors.As(err, &ie) {
				t.Fatalf("ApplyAction(%d) error = %T, want *IllegalActionError", a, err)
			}
			if ie.Action != a || ie.Player != s.CurrentPlayer() || ie.Env != -1 || !slices.Equal(ie.Legal, legal) {
				t.Errorf("IllegalActionError = %+v, want action %d player %d env -1 legal %v", ie, a, s.CurrentPlayer(), legal)
			}
			if after := s.Serialize(); after != before {
				t.Errorf("Serialize() after a refused action = %q, want %q", after, before)
			}
		})
	}
	t.Run("a finished game refuses every action", func(t *testing.T) {
		playToEnd(t, s, &rng)
		end := s.Serialize()
		for a := range card.NumActions {
			if err := s.ApplyAction(a); !errors.Is(err, card.ErrIllegalAction) {
				t.Fatalf("ApplyAction(%d) on a finished game: error = %v, want ErrIllegalAction", a, err)
			}
		}
		if s.Serialize() != end || len(s.LegalActions()) != 0 || s.NumLegal() != 0 || slices.Contains(s.LegalActionsMask(), true) {
			t.Errorf("a finished game changed or has legal actions: %v", s.LegalActions())
		}
	})
}
