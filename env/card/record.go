package card

import (
	"fmt"

	"github.com/davidgoliath/dgenv/env"
)

// RecordFields implements env.RecordFielder: the deals (each its dealer,
// the hands as dealt, the plays as [seat, card], the scores once done, and
// done), absent before the first deal, and the totals.
func (r *Record) RecordFields() []env.Field {
	p := r.Params.Players
	fields := make([]env.Field, 0, 2)
	if len(r.Deals) > 0 {
		deals := make([][]env.Field, len(r.Deals))
		for i := range r.Deals {
			d := &r.Deals[i]
			hands := make([][]int, p)
			for s := range p {
				h := make([]int, len(d.Hands[s]))
				for j, c := range d.Hands[s] {
					h[j] = int(c)
				}
				hands[s] = h
			}
			plays := make([][2]int, d.NumPlays)
			for j := range d.NumPlays {
				plays[j] = [2]int{int(d.Plays[j].Seat), int(d.Plays[j].Card)}
			}
			var scores []int // null until the deal's last trick is taken
			if d.Done {
				scores = append([]int(nil), d.Scores[:p]...)
			}
			deals[i] = []env.Field{{Name: "dealer", Value: d.Dealer}, {Name: "hands", Value: hands},
				{Name: "plays", Value: plays}, {Name: "scores", Value: scores}, {Name: "done", Value: d.Done}}
		}
		fields = append(fields, env.Field{Name: "deals", Value: deals})
	}
	return append(fields, env.Field{Name: "totals", Value: r.Totals()})
}

// StartFromFields implements env.FieldStarter: the game dealt as the
// record's "deals" say (each deal's "hands", as RecordFields writes them,
// decoded from JSON or msgpack), for its "plays" (the record's actions) to
// be replayed. A batch env's records carry no seed: its games come from
// the env's stream.
func (g *SpielGame) StartFromFields(fields map[string]any) (env.State, error) {
	raw, ok := fields["deals"]
	if !ok {
		return nil, fmt.Errorf("%s record: no deals", GameName)
	}
	dl, ok := asList(raw)
	if !ok {
		return nil, fmt.Errorf("%s record: deals is a %T, want a list", GameName, raw)
	}
	deals := make([]Hands, len(dl))
	for k, d := range dl {
		obj, ok := d.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s record: deal %d is a %T, want an object", GameName, k, d)
		}
		seats, ok := asList(obj["hands"])
		if !ok {
			return nil, fmt.Errorf("%s record: deal %d: hands is a %T, want a list", GameName, k, obj["hands"])
		}
		h := make(Hands, len(seats))
		for seat, hand := range seats {
			cards, ok := asList(hand)
			if !ok {
				return nil, fmt.Errorf("%s record: deal %d seat %d: hand is a %T, want a list", GameName, k, seat, hand)
			}
			for _, c := range cards {
				n, ok := env.AsInt(c)
				if !ok || n < 0 || n >= NumCards {
					return nil, fmt.Errorf("%s record: deal %d seat %d: card %v, want 0..%d", GameName, k, seat, c, NumCards-1)
				}
				h[seat] = append(h[seat], Card(n))
			}
		}
		deals[k] = h
	}
	s, err := g.G.NewStateFromDeals(0, deals...)
	if err != nil {
		return nil, fmt.Errorf("%s record: %w", GameName, err)
	}
	return &SpielState{S: s, g: g}, nil
}

// asList reads a decoded array: []any as JSON and msgpack decode it, or
// the typed slices RecordFields writes.
func asList(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case []int:
		out := make([]any, len(x))
		for i, n := range x {
			out[i] = n
		}
		return out, true
	case [][]int:
		out := make([]any, len(x))
		for i, n := range x {
			out[i] = n
		}
		return out, true
	case [][]env.Field:
		out := make([]any, len(x))
		for i, o := range x {
			m := make(map[string]any, len(o))
			for _, f := range o {
				m[f.Name] = f.Value
			}
			out[i] = m
		}
		return out, true
	}
	return nil, false
}
