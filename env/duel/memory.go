package duel

import "github.com/davidgoliath/dgenv/env"

// StateBytes implements env.StateSizer: what one State holds at worst, as
// an env.State (for env.CostOf): the wrapper, the State and its history
// (one byte per action, allocated for the longest game up front). A real
// game keeps no resamples.
func (g *SpielGame) StateBytes() int64 {
	return env.HeapBytes(env.SizeOf[SpielState]()) + env.HeapBytes(env.SizeOf[State]()) + env.HeapBytes(int64(g.G.MaxGameLength()))
}
