// Package games builds the registry of the games this module ships: the
// card game (david_goliath, the default) and the duel, each with its bots.
// It is wiring, not a global: every call returns a new Registry.
package games

import (
	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
	"github.com/davidgoliath/dgenv/env/duel"
)

// Default returns a new registry of the shipped games: the card game (the
// default) with package card's bots (random, heuristic, search) and the
// duel with its own. Trained policies are added by whoever loads them
// (policy.Bots, registered as card-game bots).
func Default() *env.Registry {
	r := env.NewRegistry()
	r.MustRegister(card.SpielType())
	for _, name := range card.BotNames() {
		mustBot(r, card.GameName, name, card.SpielBot(func() card.Bot {
			b, err := card.NewBot(name)
			if err != nil {
				panic(err)
			}
			return b
		}))
	}
	r.MustRegister(duel.SpielType())
	for name, f := range duel.Bots() {
		mustBot(r, duel.Name, name, f)
	}
	return r
}

func mustBot(r *env.Registry, game, name string, f env.BotFactory) {
	if err := r.RegisterBot(game, name, f); err != nil {
		panic(err)
	}
}
