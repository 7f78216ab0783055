package card

import (
	"fmt"
	"sort"
	"strings"
)

// Bot chooses an action for the seat to act in s. A bot must use only what
// that seat knows: its own hand and the public table (s.Board() minus the
// other hands), and must return a legal action. Bots are shared by many
// envs and goroutines: they keep no per-game state and draw randomness only
// from rng.
type Bot interface {
	Act(s *State, rng *RNG) Action
}

// GameChecker is implemented by bots that can play only some games (a
// trained policy knows one observation layout). The registry's bots
// (SpielBot) and PlayMatch refuse a game such a bot rejects.
type GameChecker interface {
	CheckGame(g *Game) error
}

// checkBot asks a bot whether it can play g.
func checkBot(name string, b Bot, g *Game) error {
	if c, ok := b.(GameChecker); ok {
		if err := c.CheckGame(g); err != nil {
			return fmt.Errorf("opponent %q: %w", name, err)
		}
	}
	return nil
}

// BotFactory makes a bot.
type BotFactory func() Bot

// bots are this package's own bots, a fixed table: bots of other origins
// (trained policies) are registered in an env.Registry value by whoever
// serves them, never here.
var bots = map[string]BotFactory{
	"random":    func() Bot { return RandomBot{} },
	"heuristic": func() Bot { return HeuristicBot{} },
	"search":    func() Bot { return SearchBot{} },
}

// BotNames lists this package's bots.
func BotNames() []string {
	names := make([]string, 0, len(bots))
	for n := range bots {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NewBot returns this package's bot called name.
func NewBot(name string) (Bot, error) {
	f, ok := bots[name]
	if !ok {
		return nil, fmt.Errorf("opponent %q: unknown bot (known: %s)", name, strings.Join(BotNames(), ", "))
	}
	return f(), nil
}

// RandomBot plays uniformly among the legal actions.
type RandomBot struct{}

// Act implements Bot.
func (RandomBot) Act(s *State, rng *RNG) Action {
	p := s.current()
	al := s.allowed(p)
	k := rng.IntN(s.NumLegal())
	for c := range NumColours {
		if al&(1<<c) == 0 {
			continue
		}
		m := s.b.Hands[p][c]
		if n := popcount(m); k >= n {
			k -= n
			continue
		}
		for ; k > 0; k-- {
			m &= m - 1
		}
		return c*MaxValue + trailingZeros(m)
	}
	panic("env: RandomBot found no legal action")
}
