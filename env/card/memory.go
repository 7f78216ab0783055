package card

import (
	"unsafe"

	"github.com/davidgoliath/dgenv/env"
)

// EnvBytes is what one env of the card game holds in the batch engine at
// worst besides its output buffers (env.EnvSizer, for env.CostOf): its
// State and SpielState (NewStreamStates), the engine's three interface
// values of it (State, StepRewarder, RowWriter), bot RNG and done flag, and two game records (the last finished game
// and the one in progress) with every deal of both.
func (g *SpielGame) EnvBytes() int64 {
	p := g.G.Params()
	var st env.State
	return int64(unsafe.Sizeof(State{})) + int64(unsafe.Sizeof(SpielState{})) + 3*int64(unsafe.Sizeof(st)) +
		int64(unsafe.Sizeof(RNG{})) + 1 +
		2*(int64(unsafe.Sizeof(Record{}))+int64(p.Deals)*int64(unsafe.Sizeof(DealRecord{})))
}
