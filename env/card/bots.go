package card

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/davidgoliath/dgenv/env"
)

// The card game's bots are env.Bots: Act takes the env.State the engine,
// the arena and dgeval hand them (this game's *SpielState) and works on
// the game's own *State inside. Which bots exist is the registry's to say:
// Bots lists this package's for env/games to register, and a bot that can
// play only some configurations (a trained policy) says so through the
// error of its env.BotFactory.

// StateBot is the narrow, optional form of env.Bot for code that already
// holds the card game's *State: the search bot's playouts, its seat
// models and the batch kernel call ActState, so no playout wraps a state
// in an interface. Every bot of this package (and the policies' card-game
// bots) implements it; ActState(s) chooses what Act chooses for s wrapped
// as a *SpielState, with the same random stream.
type StateBot interface {
	env.Bot
	ActState(s *State, rng *RNG) Action
}

// stateOf is the card game's state inside an env.State of this game. A
// registry hands a card bot only this game's states (its BotFactory
// refuses other games), so another type is a wiring bug.
func stateOf(s env.State) *State {
	ss, ok := s.(*SpielState)
	if !ok {
		panic(fmt.Sprintf("card: a bot of %s was given a %T", GameName, s))
	}
	return ss.S
}

// Bots returns this package's bots by name, for a registry (env/games
// registers them under GameName): random, heuristic and search.
func Bots() map[string]env.BotFactory {
	return map[string]env.BotFactory{
		"random":    Factory(RandomBot{}),
		"heuristic": Factory(HeuristicBot{}),
		"search":    Factory(SearchBot{}),
	}
}

// Factory makes b a registry's env.BotFactory: b plays any game of this
// type (any players and deals) and refuses every other game.
func Factory(b StateBot) env.BotFactory {
	return func(g env.Game) (env.Bot, error) {
		if err := checkGame(g); err != nil {
			return nil, err
		}
		return b, nil
	}
}

// checkGame says whether g is a game of this package (the check every
// card bot's factory makes first).
func checkGame(g env.Game) error {
	if _, ok := g.(*SpielGame); !ok {
		return fmt.Errorf("plays only %s, not %s", GameName, g.Type().Name)
	}
	return nil
}

// RandomBot plays uniformly among the legal actions.
type RandomBot struct{}

// Act implements env.Bot.
func (b RandomBot) Act(s env.State, rng *RNG) int { return b.ActState(stateOf(s), rng) }

// ActState implements StateBot.
func (RandomBot) ActState(s *State, rng *RNG) Action {
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

// newBot makes the bot of Bots() called name: the batch kernel's
// opponents given by name only (a registry's session passes the bots its
// registry made instead).
func newBot(name string) (StateBot, error) {
	f, ok := Bots()[name]
	if !ok {
		known := slices.Sorted(maps.Keys(Bots()))
		return nil, fmt.Errorf("opponent %q: unknown bot (known: %s)", name, strings.Join(known, ", "))
	}
	b, err := f(&SpielGame{}) // this package's factories check the type only
	if err != nil {
		return nil, err
	}
	return b.(StateBot), nil
}
