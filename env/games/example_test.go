package games_test

import (
	"fmt"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/games"
)

// A game is found by name, made from parameters (defaults filled, each
// checked), and played through the interface; a batch of it steps in a Vec.
func Example() {
	reg := games.Default()
	typ, _ := reg.Lookup("duel")
	g, err := typ.New(map[string]any{"max_rounds": 50})
	if err != nil {
		panic(err)
	}
	fmt.Println(g.Type().Name, g.NumPlayers(), "players,", g.NumDistinctActions(), "actions, obs", g.Observation().Size)

	s := g.NewInitialState(7)
	for !s.IsTerminal() {
		legal := env.LegalActions(s)
		if err := s.ApplyAction(legal[0]); err != nil {
			panic(err)
		}
	}
	rec := env.RecordOf(s)
	_, err = rec.Replay(reg)
	fmt.Println("replays:", err == nil)

	bot, _ := reg.NewBot(g, "heuristic")
	v, _ := env.NewVec(g, env.VecConfig{NumEnvs: 4, Seed: 1, LearnerSeats: []int{0}, Opponent: "heuristic", Bot: bot})
	defer v.Close()
	fmt.Println("mask", len(v.Mask()), "obs", len(v.Obs()))

	_, err = typ.New(map[string]any{"max_rounds": 0})
	fmt.Println(err)
	// Output:
	// duel 2 players, 117 actions, obs 461
	// replays: true
	// mask 468 obs 1844
	// game parameter "max_rounds" = 0: must be 1..250
}
