package testgame

import "github.com/davidgoliath/dgenv/env"

// StateBytes implements env.StateSizer: what one State holds at worst (for
// env.CostOf): the State and its history, grown by append to at most
// twice the longest game's actions.
func (g *Game) StateBytes() int64 {
	return env.HeapBytes(env.SizeOf[State]()) + env.HeapBytes(2*8*int64(g.MaxGameLength()))
}
