package wire

import "github.com/davidgoliath/dgenv/env"

// Positions answers GET /v1/sessions/{id}/envs/{k}/positions: a game record
// replayed and described for people (env.Describer; the browser page draws
// the duel from it). Positions[j] is the position after From+j of the
// record's Actions actions; Steps[j] is the action played in Positions[j].
type Positions struct {
	Game      GameSpec `json:"game"`
	Which     string   `json:"which"` // "finished" or "current"
	Actions   int      `json:"actions"`
	Done      bool     `json:"done"` // the game is over
	From      int      `json:"from"`
	Positions []object `json:"positions"`
	Steps     []Step   `json:"steps"`
}

// Step is one described action.
type Step struct {
	Seat   int    `json:"seat"`
	Action int    `json:"action"`
	Text   string `json:"text"`
}

// PositionsOf converts a described record (env.Record.Describe).
func PositionsOf(r *env.Record, which string, from int, positions [][]env.Field, steps []env.Step) *Positions {
	out := &Positions{Game: GameSpec{"name": r.Game}, Which: which, Actions: len(r.Actions), Done: r.Terminal, From: from,
		Positions: make([]object, len(positions)), Steps: make([]Step, len(steps))}
	for k, v := range r.Values {
		out.Game[k] = v
	}
	for i, p := range positions {
		out.Positions[i] = p
	}
	for i, s := range steps {
		out.Steps[i] = Step{Seat: s.Seat, Action: s.Action, Text: s.Text}
	}
	return out
}
