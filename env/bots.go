package env

import (
	"fmt"
	"sort"
	"strings"
	"sync"
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
// trained policy knows one observation layout). NewVecEnv and PlayMatch
// refuse a game such a bot rejects.
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

var (
	botsMu sync.RWMutex
	bots   = map[string]BotFactory{
		"random":    func() Bot { return RandomBot{} },
		"heuristic": func() Bot { return HeuristicBot{} },
		"search":    func() Bot { return SearchBot{} },
	}
)

// RegisterBot makes a bot available by name (later bots: search, policies).
func RegisterBot(name string, f BotFactory) {
	botsMu.Lock()
	defer botsMu.Unlock()
	bots[name] = f
}

// BotNames lists the registered bots.
func BotNames() []string {
	botsMu.RLock()
	defer botsMu.RUnlock()
	names := make([]string, 0, len(bots))
	for n := range bots {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NewBot returns the bot registered under name.
func NewBot(name string) (Bot, error) {
	botsMu.RLock()
	f, ok := bots[name]
	botsMu.RUnlock()
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
