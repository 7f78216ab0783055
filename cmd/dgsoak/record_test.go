package main

import (
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/server/wire"
)

// finished plays a batch of game name until env 0 finishes a game and
// returns that record as the server sends it (wire.RecordOf).
func finished(t *testing.T, name string) *wire.Record {
	t.Helper()
	reg := games.Default()
	typ, err := reg.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	g, err := typ.Default()
	if err != nil {
		t.Fatal(err)
	}
	v, err := env.NewVec(g, env.VecConfig{NumEnvs: 1, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	rng := env.NewRNG(9, 0)
	actions := make([]int32, 1)
	for range 100000 {
		actions[0] = int32(env.RandomBot{}.Act(v.State(0), &rng))
		if err := v.Step(actions); err != nil {
			t.Fatal(err)
		}
		if v.Done()[0] == 1 {
			f, _, err := v.Record(0)
			if err != nil || f == nil {
				t.Fatalf("Record(0) = %v, %v", f, err)
			}
			return wire.RecordOf(f)
		}
	}
	t.Fatal("no game finished")
	return nil
}

// TestRecordReplays: a finished record of every registered game, sent as
// JSON or msgpack and decoded as the soak decodes it, replays through the
// registry (the card game's from its deals, having no seed); a record
// whose actions or returns were changed does not.
func TestRecordReplays(t *testing.T) {
	for _, name := range games.Default().Names() {
		for _, useJSON := range []bool{false, true} {
			w := finished(t, name)
			b, err := encode(map[string]any{"finished": w}, useJSON)
			if err != nil {
				t.Fatal(err)
			}
			ct := "application/msgpack"
			if useJSON {
				ct = "application/json"
			}
			decodeRecord := func() *env.Record {
				var ra recordAnswer
				if err := decodeRecord(b, ct, &ra); err != nil {
					t.Fatal(err)
				}
				r, err := envRecord(ra.Finished)
				if err != nil {
					t.Fatalf("%s (json %v): envRecord: %v", name, useJSON, err)
				}
				return r
			}
			r := decodeRecord()
			if r.Game != name || len(r.Actions) != len(w.Actions) || len(r.Returns) != len(w.Returns) {
				t.Fatalf("%s (json %v): decoded %s with %d actions, %d returns; want %d, %d", name, useJSON, r.Game, len(r.Actions), len(r.Returns), len(w.Actions), len(w.Returns))
			}
			if _, err := r.Replay(games.Default()); err != nil {
				t.Errorf("%s (json %v): Replay: %v", name, useJSON, err)
			}
			r = decodeRecord()
			r.Actions = r.Actions[:len(r.Actions)-1]
			if _, err := r.Replay(games.Default()); err == nil {
				t.Errorf("%s (json %v): a record missing its last action replayed", name, useJSON)
			}
			r = decodeRecord()
			r.Returns[0]++
			if _, err := r.Replay(games.Default()); err == nil {
				t.Errorf("%s (json %v): a record with a wrong return replayed", name, useJSON)
			}
		}
	}
}
