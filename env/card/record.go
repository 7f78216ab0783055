package card

import "github.com/davidgoliath/dgenv/env"

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
