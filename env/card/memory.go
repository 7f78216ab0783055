package card

import "unsafe"

// EnvBytes is what one env of the card game's batch kernel holds at worst
// besides the engine's output buffers (env.EnvSizer, for env.CostOf): its
// State, bot RNG and done flag, and two game records (the last finished game
// and the one in progress) with every deal of both.
func (g *SpielGame) EnvBytes() int64 {
	p := g.G.Params()
	return int64(unsafe.Sizeof(State{})) + int64(unsafe.Sizeof(RNG{})) + 1 +
		2*(int64(unsafe.Sizeof(Record{}))+int64(p.Deals)*int64(unsafe.Sizeof(DealRecord{})))
}
