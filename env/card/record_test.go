package card_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
	"github.com/davidgoliath/dgenv/env/games"
)

// finishedBatchRecord plays a batch of the card game until env 0 finishes
// a game and returns its record: a batch env's, so it has no seed.
func finishedBatchRecord(t *testing.T, players, deals int) (*env.Record, []int32) {
	t.Helper()
	reg := games.Default()
	typ, err := reg.Lookup(card.GameName)
	require.NoError(t, err)
	g, err := typ.New(map[string]any{"players": players, "deals": deals})
	require.NoError(t, err)
	v, err := env.NewVec(g, env.VecConfig{NumEnvs: 2, Seed: 7})
	require.NoError(t, err)
	defer v.Close()
	rng := env.NewRNG(3, 0)
	actions := make([]int32, 2)
	for range 10000 {
		for i := range actions {
			actions[i] = int32(env.RandomBot{}.Act(v.State(i), &rng))
		}
		require.NoError(t, v.Step(actions))
		if v.Done()[0] == 1 {
			f, _, err := v.Record(0)
			require.NoError(t, err)
			require.NotNil(t, f)
			return f, append([]int32(nil), v.Scores()[:players]...)
		}
	}
	t.Fatal("env 0 finished no game")
	return nil, nil
}

// fieldsOf is the record's own fields as a front end decodes them from
// JSON: objects as map[string]any, arrays as []any, numbers as float64.
func fieldsOf(t *testing.T, r *env.Record) map[string]any {
	t.Helper()
	b, err := json.Marshal(plain(r.Extra.(env.RecordFielder).RecordFields()))
	require.NoError(t, err)
	out := map[string]any{}
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

// plain is a RecordFielder's value with its objects as maps (as the wire
// writes them).
func plain(v any) any {
	switch v := v.(type) {
	case []env.Field:
		m := make(map[string]any, len(v))
		for _, f := range v {
			m[f.Name] = plain(f.Value)
		}
		return m
	case [][]env.Field:
		out := make([]any, len(v))
		for i, o := range v {
			out[i] = plain(o)
		}
		return out
	}
	return v
}

// TestReplayBatchRecord: a batch env's record carries no seed; it replays
// from its own fields (each deal's hands) through env.Record.Replay, and a
// record whose actions or hands were changed does not.
func TestReplayBatchRecord(t *testing.T) {
	reg := games.Default()
	for _, p := range []int{3, 4, 6} {
		rec, scores := finishedBatchRecord(t, p, 2)
		require.False(t, rec.HasSeed, "a batch record has a seed")
		require.True(t, rec.Terminal)
		for i, s := range scores {
			require.Equal(t, float64(s), rec.Returns[i], "seat %d: record returns vs batch scores", i)
		}
		fields := fieldsOf(t, rec)

		decoded := *rec
		decoded.Extra = fields
		s, err := decoded.Replay(reg)
		require.NoError(t, err, "players %d", p)
		require.Equal(t, rec.Returns, env.Returns(s))

		typed := *rec
		typed.Extra = map[string]any{}
		for _, f := range rec.Extra.(env.RecordFielder).RecordFields() {
			typed.Extra.(map[string]any)[f.Name] = f.Value
		}
		_, err = typed.Replay(reg)
		require.NoError(t, err, "players %d, the fields as RecordFields writes them", p)

		cut := decoded
		cut.Actions = rec.Actions[:len(rec.Actions)-1]
		_, err = cut.Replay(reg)
		require.Error(t, err, "a record missing its last action replayed")

		swapped := decoded
		swapped.Extra = fieldsOf(t, rec)
		hands := swapped.Extra.(map[string]any)["deals"].([]any)[0].(map[string]any)["hands"].([]any)
		hands[0], hands[1] = hands[1], hands[0]
		_, err = swapped.Replay(reg)
		require.Error(t, err, "a record with two hands swapped replayed")

		_, err = (&env.Record{Game: card.GameName, Values: rec.Values, Actions: rec.Actions, Extra: map[string]any{}}).Replay(reg)
		require.ErrorContains(t, err, "no deals")
		bad := fieldsOf(t, rec)
		bad["deals"].([]any)[0].(map[string]any)["hands"].([]any)[0].([]any)[0] = 999.0
		_, err = (&env.Record{Game: card.GameName, Values: rec.Values, Actions: rec.Actions, Extra: bad}).Replay(reg)
		require.ErrorContains(t, err, "card 999")
	}
	_, err := (&env.Record{Game: card.GameName, Values: env.Values{"players": 4}}).Replay(reg)
	require.True(t, err != nil && strings.Contains(err.Error(), "no seed"), "err = %v", err)
}
