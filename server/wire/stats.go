package wire

import (
	"math"
	"strconv"

	"github.com/davidgoliath/dgenv/env"
)

// Match statistics on the wire: the form dgeval -json prints and the C
// library's dg_match_stats answers (Python's dgenv.stats reads both), one
// definition of the keys for both.

// Estimate is env.Estimate on the wire: a value that is not finite (the
// interval of one sample, anything of none) is null, which JSON can carry.
type Estimate env.Estimate

// MarshalJSON implements json.Marshaler.
func (e Estimate) MarshalJSON() ([]byte, error) {
	num := func(x float64) string {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "null"
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return []byte(`{"mean":` + num(e.Mean) + `,"ci95":` + num(e.CI95) + `}`), nil
}

// AgentStats is one agent's statistics (env.AgentStats).
type AgentStats struct {
	Name  string   `json:"name"`
	Seats int      `json:"seats"`
	Score Estimate `json:"score"`      // total per game
	Diff  Estimate `json:"score_diff"` // total minus the mean of the other seats
	Win   Estimate `json:"win_rate"`   // share of the win (ties share)
}

// AgentsOf is stats on the wire, in order.
func AgentsOf(stats []env.AgentStats) []AgentStats {
	out := make([]AgentStats, len(stats))
	for i, st := range stats {
		out[i] = AgentStats{Name: st.Name, Seats: st.Seats, Score: Estimate(st.Score), Diff: Estimate(st.Diff), Win: Estimate(st.Win)}
	}
	return out
}
