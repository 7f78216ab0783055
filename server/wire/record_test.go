package wire_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/server/wire"
)

// The card game's record as the wire showed it when server/wire knew the
// card game (a copy of that conversion): the bytes must stay the same.
type oldDeal struct {
	Dealer int      `json:"dealer"`
	Hands  [][]int  `json:"hands"`
	Plays  [][2]int `json:"plays"`
	Scores []int    `json:"scores"`
	Done   bool     `json:"done"`
}

type oldRecord struct {
	Game    wire.GameSpec `json:"game"`
	Actions []int         `json:"actions"`
	Returns []float64     `json:"returns"`
	Seed    *uint64       `json:"seed,omitempty"`
	Deals   []oldDeal     `json:"deals,omitempty"`
	Totals  []int         `json:"totals,omitempty"`
}

func oldRecordOf(sr *env.Record) *oldRecord {
	if sr == nil {
		return nil
	}
	g := &oldRecord{Game: wire.GameSpec{"name": sr.Game}, Actions: sr.Actions, Returns: sr.Returns}
	for k, v := range sr.Values {
		g.Game[k] = v
	}
	if g.Actions == nil {
		g.Actions = []int{}
	}
	if sr.HasSeed {
		seed := sr.Seed
		g.Seed = &seed
	}
	r, ok := sr.Extra.(*card.Record)
	if !ok {
		return g
	}
	p := r.Params.Players
	g.Deals, g.Totals = make([]oldDeal, len(r.Deals)), r.Totals()
	for i := range r.Deals {
		d := &r.Deals[i]
		w := oldDeal{Dealer: d.Dealer, Hands: make([][]int, p), Plays: make([][2]int, d.NumPlays), Done: d.Done}
		for s := range p {
			h := make([]int, len(d.Hands[s]))
			for j, c := range d.Hands[s] {
				h[j] = int(c)
			}
			w.Hands[s] = h
		}
		for j := range d.NumPlays {
			w.Plays[j] = [2]int{int(d.Plays[j].Seat), int(d.Plays[j].Card)}
		}
		if d.Done {
			w.Scores = append([]int(nil), d.Scores[:p]...)
		}
		g.Deals[i] = w
	}
	return g
}

// encodings are a value's JSON and its msgpack as the server writes them
// (map keys sorted).
func encodings(t *testing.T, v any) (string, string) {
	t.Helper()
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetCustomStructTag("json")
	enc.UseCompactInts(true)
	// The server does not sort a map's keys (a game spec's parameters):
	// sorted here, so the bytes compare.
	enc.SetSortMapKeys(true)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return string(j), buf.String()
}

// TestRecordsOnTheWireAreAsBefore: the records of the card game (deals and
// totals, through env.RecordFielder) and of the duel (no extra fields) are
// the bytes they were, in JSON and msgpack, at every step of some games.
func TestRecordsOnTheWireAreAsBefore(t *testing.T) {
	reg := games.Default()
	for _, game := range []struct {
		name   string
		params map[string]any
	}{{card.GameName, map[string]any{"players": 3, "deals": 2}}, {"duel", nil}} {
		typ, err := reg.Lookup(game.name)
		if err != nil {
			t.Fatal(err)
		}
		g, err := typ.New(game.params)
		if err != nil {
			t.Fatal(err)
		}
		const n = 3
		v, err := env.NewVec(g, env.VecConfig{NumEnvs: n, Seed: 5, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		rng := env.NewRNG(1, 2)
		na := g.NumDistinctActions()
		acts := make([]int32, n)
		seen := map[string]bool{}
		for step := 0; step < 400; step++ {
			for k := range n {
				fin, cur, err := v.Record(k)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range []*env.Record{fin, cur} {
					type pair struct {
						New *wire.Record `json:"r"`
					}
					type oldPair struct {
						Old *oldRecord `json:"r"`
					}
					nj, nm := encodings(t, pair{wire.RecordOf(r)})
					oj, om := encodings(t, oldPair{oldRecordOf(r)})
					if nj != oj || nm != om {
						t.Fatalf("%s env %d step %d:\n new %s\n old %s\n (msgpack equal: %v)", game.name, k, step, nj, oj, nm == om)
					}
					seen[nj[:min(len(nj), 12)]] = true
				}
			}
			mask := v.Mask()
			for k := range n {
				var legal []int32
				for a := range na {
					if mask[k*na+a] != 0 {
						legal = append(legal, int32(a))
					}
				}
				acts[k] = legal[rng.IntN(len(legal))]
			}
			if err := v.Step(acts); err != nil {
				t.Fatal(err)
			}
		}
		v.Close()
		if !seen[`{"r":null}`] || len(seen) < 2 {
			t.Errorf("%s: the records seen do not include null and a record: %v", game.name, seen)
		}
	}
}
