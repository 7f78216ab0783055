// Package card is the David & Goliath card game: the rules, an OpenSpiel-style
// Game and State, a vectorised batch environment and built-in bots.
//
// Rules: the Pegasus Spiele rulebook (2008, Reinhard Staupe) as settled in
// shared/design/RULES.md. Notes on this implementation:
//   - A card id is also an action id: colour*18 + value-1, 90 ids for every
//     player count; cards outside the deck for P players are never legal.
//   - Seats 0..P-1 are clockwise. Deal k is dealt by (first_dealer+k) mod P
//     and led by the seat left of the dealer.
//   - Hands and prize piles are per-colour bit sets (bit v-1 = value v), so
//     following colour, legality and scoring are a few bit operations.
//   - Chance (the shuffle) is inside the state: each State carries its own
//     RNG that deals the next deal, so a seed fixes every deal of a game, and
//     the deals do not depend on how the game is played.
//
// The package does no I/O and knows nothing of HTTP, msgpack or viper.
package card

import (
	"fmt"
	"strconv"
	"strings"
)

// Sizes and ids (the others, NumColours to MaxDeals, are with the encoder's
// Board in obs.go).
const (
	NumActions    = NumCards // one action per card id, for every player count
	TricksPerDeal = HandSize // every player plays one card per trick
)

// Action is a card id, 0..89.
type Action = int

// Card is a card id, colour*18 + value-1.
type Card = uint8

// ColourNames are indexed by colour.
var ColourNames = [NumColours]string{"red", "yellow", "green", "blue", "purple"}

// CardID returns the id of the card of the given colour (0..4) and value (1..18).
func CardID(colour, value int) Card { return Card(colour*MaxValue + value - 1) }

// Colour of a card id.
func Colour(c Card) int { return int(c) / MaxValue }

// Value of a card id, 1..18.
func Value(c Card) int { return int(c)%MaxValue + 1 }

// CardString is the human-readable name of a card: "green 12".
func CardString(c Card) string {
	if int(c) >= NumActions {
		return fmt.Sprintf("card(%d)", c)
	}
	return ColourNames[Colour(c)] + " " + strconv.Itoa(Value(c))
}

// ParseCard reads "green 12" (or "g12", "G12", a bare id "44").
func ParseCard(s string) (Card, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return 0, fmt.Errorf("bad card %q: empty", s)
	}
	if id, err := strconv.Atoi(s); err == nil {
		if id < 0 || id >= NumActions {
			return 0, fmt.Errorf("card id %d out of range 0..%d", id, NumActions-1)
		}
		return Card(id), nil
	}
	for c, name := range ColourNames {
		var rest string
		switch {
		case strings.HasPrefix(s, name):
			rest = s[len(name):]
		case s[0] == name[0]:
			rest = s[1:]
		default:
			continue
		}
		v, err := strconv.Atoi(strings.TrimSpace(rest))
		if err != nil || v < 1 || v > MaxValue {
			return 0, fmt.Errorf("bad card %q: value must be 1..%d", s, MaxValue)
		}
		return CardID(c, v), nil
	}
	return 0, fmt.Errorf("bad card %q: want a colour (%s) and a value", s, strings.Join(ColourNames[:], ", "))
}

// DeckValues is the highest value in the deck for a player count: 3*players.
func DeckValues(players int) int { return 3 * players }

// InDeck reports whether card c is in the deck for a player count.
func InDeck(c Card, players int) bool {
	return int(c) < NumActions && Value(c) <= DeckValues(players)
}

// ColourScore scores one colour of a prize pile given as a bit set
// (bit v-1 = value v): face values for one or two cards, one point each for three or more.
func ColourScore(m uint32) int {
	s := 0
	for b := m; b != 0; b &= b - 1 {
		s += trailingZeros(b) + 1
	}
	return ColourPoints(popcount(m), s)
}

// ColourPoints is the colour-scoring rule, the one definition every scorer
// uses (the heuristic bot too, on expected values): n cards of one colour
// whose values add up to sum score sum for one or two cards, and one point
// each (n) for three or more.
func ColourPoints[T int | float64](n int, sum T) T {
	if n > 2 {
		return T(n)
	}
	return sum
}

// Score adds ColourScore over the five colours of a prize pile.
func Score(pile *[NumColours]uint32) int {
	s := 0
	for _, m := range pile {
		s += ColourScore(m)
	}
	return s
}

// ScoreCards scores a prize pile given as a list of cards.
func ScoreCards(cards []Card) int {
	var pile [NumColours]uint32
	for _, c := range cards {
		pile[Colour(c)] |= 1 << (Value(c) - 1)
	}
	return Score(&pile)
}
