package server

import (
	"fmt"
	"math"

	"github.com/davidgoliath/dgenv/env"
)

// costOf works out the worst case of a session of n envs of game g with
// observations as obsDtype ("<u1"/"<f4") or bit-packed: env.CostOf, the
// estimate the in-process library checks too.
func costOf(n int, g env.Game, obsDtype string, packed bool) env.SessionCost {
	return env.CostOf(n, g, obsDtype == dtypeF4, packed)
}

// mib formats bytes as MiB for messages.
func mib(b int64) string { return fmt.Sprintf("%.0f MiB", math.Ceil(float64(b)/(1<<20))) }
