package card

import (
	"fmt"
	"strings"
)

// Game is a game configuration: OpenSpiel's Game. It is immutable and safe
// to share between goroutines.
type Game struct {
	params Params
	layout Layout
}

// NewGame validates p (deals 0 means as many as players) and returns the game.
func NewGame(p Params) (*Game, error) {
	p, err := p.Normalized()
	if err != nil {
		return nil, err
	}
	return &Game{params: p, layout: NewLayout(p.Players)}, nil
}

// Params returns the game's parameters, defaults filled in.
func (g *Game) Params() Params { return g.params }

// NumDistinctActions is 90 for every player count (one per card id).
func (g *Game) NumDistinctActions() int { return NumActions }

// NumPlayers is the number of seats.
func (g *Game) NumPlayers() int { return g.params.Players }

// MaxGameLength is the number of actions in a game (every game has exactly this many).
func (g *Game) MaxGameLength() int { return g.params.Deals * TricksPerDeal * g.params.Players }

// MinUtility is the lowest possible total (0 points).
func (g *Game) MinUtility() float64 { return 0 }

// MaxUtility bounds a total from above: per deal and colour at most the two
// highest values in the deck (or every card of the colour at one point each).
func (g *Game) MaxUtility() float64 {
	v := DeckValues(g.params.Players)
	perColour := max(2*v-1, v)
	return float64(g.params.Deals * NumColours * perColour)
}

// ObservationLayout describes the observation tensor.
func (g *Game) ObservationLayout() Layout { return g.layout }

// ObservationTensorShape is [size].
func (g *Game) ObservationTensorShape() []int { return []int{g.layout.Size} }

// NewInitialState deals the first deal from seed. Later deals come from the
// same seeded RNG, so one seed fixes every deal whatever is played.
func (g *Game) NewInitialState(seed uint64) *State {
	s := g.newState(NewRNG(seed, 0), true)
	s.newGame()
	return s
}

func (g *Game) newState(rng RNG, record bool) *State {
	s := &State{game: g, rng: rng}
	if record {
		s.rec = &Record{}
	}
	return s
}

// NewStateFromDeals starts a game whose first deals are given: deals[k][seat]
// lists the 15 cards of that seat in deal k. Deals not given are drawn from
// seed. Used for duplicate evaluation and tests.
func (g *Game) NewStateFromDeals(seed uint64, deals ...Hands) (*State, error) {
	if len(deals) > g.params.Deals {
		return nil, fmt.Errorf("%d deals given for a game of %d", len(deals), g.params.Deals)
	}
	forced := make([][]handsArr, len(deals))
	for k, h := range deals {
		arr, err := g.checkHands(h)
		if err != nil {
			return nil, fmt.Errorf("deal %d: %w", k, err)
		}
		forced[k] = []handsArr{arr}
	}
	s := g.newState(NewRNG(seed, 0), true)
	s.forced = forced
	s.newGame()
	return s, nil
}

// checkHands validates a deal: one hand of 15 cards per seat, together the
// deck for this player count, each card once.
func (g *Game) checkHands(h Hands) (handsArr, error) {
	var arr handsArr
	p := g.params.Players
	if len(h) != p {
		return arr, fmt.Errorf("%d hands for %d players", len(h), p)
	}
	var seen [NumActions]bool
	for seat, hand := range h {
		if len(hand) != HandSize {
			return arr, fmt.Errorf("seat %d has %d cards, want %d", seat, len(hand), HandSize)
		}
		for i, c := range hand {
			if !InDeck(c, p) {
				return arr, fmt.Errorf("seat %d: card %d is not in the %d-player deck", seat, c, p)
			}
			if seen[c] {
				return arr, fmt.Errorf("seat %d: card %s dealt twice", seat, CardString(c))
			}
			seen[c] = true
			arr[seat][i] = c
		}
	}
	return arr, nil
}

// String shows the whole state for people: deal, trick, hands, prizes, scores.
func (s *State) String() string {
	var sb strings.Builder
	p := s.game.params
	fmt.Fprintf(&sb, "players=%d deals=%d first_dealer=%d\n", p.Players, p.Deals, p.FirstDealer)
	fmt.Fprintf(&sb, "deal %d/%d dealer %d trick %d/%d", s.b.Deal+1, p.Deals, s.dealer, min(int(s.b.TricksDone)+1, TricksPerDeal), TricksPerDeal)
	if s.terminal {
		sb.WriteString(" (game over)\n")
	} else {
		fmt.Fprintf(&sb, " seat %d to play\n", s.current())
	}
	trick, leader := s.Trick()
	fmt.Fprintf(&sb, "trick led by %d:", leader)
	for i, c := range trick {
		fmt.Fprintf(&sb, " %d:%s", (leader+i)%p.Players, CardString(c))
	}
	sb.WriteString("\n")
	for seat := range p.Players {
		fmt.Fprintf(&sb, "seat %d total %d deal %d voids %s\n  hand:  %s\n  prizes: %s\n",
			seat, s.b.Totals[seat], s.DealScore(seat), colourSet(s.b.Voids[seat]),
			cardList(s.Hand(seat)), cardList(s.Prizes(seat)))
	}
	return sb.String()
}

func cardList(cs []Card) string {
	if len(cs) == 0 {
		return "-"
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = CardString(c)
	}
	return strings.Join(parts, ", ")
}

func colourSet(m uint8) string {
	var names []string
	for c := range NumColours {
		if m&(1<<c) != 0 {
			names = append(names, ColourNames[c])
		}
	}
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ",")
}
