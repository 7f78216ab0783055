package wire_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/server/wire"
)

// readBack is a Record as the server writes it, decoded as a client (or
// the server's POST /v1/positions) decodes it, and read by RecordFrom.
func readBack(t *testing.T, r *wire.Record, useJSON bool) (*env.Record, error) {
	t.Helper()
	var m map[string]any
	if useJSON {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		v, err := wire.DecodeJSON(b)
		if err != nil {
			t.Fatal(err)
		}
		m = v.(map[string]any)
	} else {
		b, err := msgpack.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := msgpack.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
	}
	return wire.RecordFrom(m)
}

// A record read back is the record written: every seed exactly (a float64
// would lose a 64-bit seed's low bits), the game's parameters, actions and
// returns, in JSON and in msgpack.
func TestRecordFromReadsBackWhatRecordOfWrites(t *testing.T) {
	for _, seed := range []uint64{0, 7, 1<<53 + 1, math.MaxUint64} {
		for _, useJSON := range []bool{true, false} {
			in := &env.Record{Game: "duel", Values: env.Values{"max_rounds": 30}, Actions: []int{3, 0, 116}, Returns: []float64{1, -1}, HasSeed: true, Seed: seed}
			got, err := readBack(t, wire.RecordOf(in), useJSON)
			if err != nil {
				t.Fatalf("seed %d (json %v): %v", seed, useJSON, err)
			}
			if got.Game != in.Game || got.Values["max_rounds"] != 30 || !got.HasSeed || got.Seed != seed ||
				len(got.Actions) != 3 || got.Actions[2] != 116 || got.Returns[1] != -1 {
				t.Fatalf("seed %d (json %v): read back %+v, want %+v", seed, useJSON, got, in)
			}
		}
	}
}

func TestRecordFromRefusesWhatIsNotARecord(t *testing.T) {
	for _, tc := range []struct {
		body, says string
	}{
		{`{"actions": [], "returns": []}`, "game is missing"},
		{`{"game": {"max_rounds": 3}, "actions": [], "returns": []}`, "game.name is missing"},
		{`{"game": {"name": 3}, "actions": [], "returns": []}`, "game.name is a number"},
		{`{"game": {"name": "duel", "max_rounds": "3"}, "actions": [], "returns": []}`, "game.max_rounds"},
		{`{"game": {"name": "duel", "max_rounds": 1e40}, "actions": [], "returns": []}`, "game.max_rounds"},
		{`{"game": {"name": "duel"}, "returns": []}`, "actions is missing"},
		{`{"game": {"name": "duel"}, "actions": [1, 2.5], "returns": []}`, "actions[1] = 2.5"},
		{`{"game": {"name": "duel"}, "actions": [4294967296], "returns": []}`, "actions[0]"},
		{`{"game": {"name": "duel"}, "actions": [], "returns": {}}`, "returns is an object"},
		{`{"game": {"name": "duel"}, "actions": [], "returns": ["1"]}`, "returns[0]"},
		{`{"game": {"name": "duel"}, "actions": [], "returns": [], "seed": -1}`, "seed = -1"},
		{`{"game": {"name": "duel"}, "actions": [], "returns": [], "seed": 18446744073709551616}`, "seed = "},
		{`{"game": {"name": "duel"}, "actions": [], "returns": [], "seed": 1.5}`, "seed = 1.5"},
	} {
		v, err := wire.DecodeJSON([]byte(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		_, err = wire.RecordFrom(v.(map[string]any))
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("RecordFrom(%s) = %v, want an error saying %q", tc.body, err, tc.says)
		}
	}
	if _, err := wire.DecodeJSON([]byte(`{"game": {}} {}`)); err == nil {
		t.Error("DecodeJSON of two values: no error")
	}
}
