package card_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
	"github.com/davidgoliath/dgenv/env/games"
)

// TestSearchValuesThroughTheRegistry: the registry's "search" bot is an
// env.ActionValuer and an env.Sampler; ActionValues on the generic state is
// SearchBot.Values on the card game's state with Workers 1, whatever the
// bot's Workers, and leaves the state as it was; WithSamples sets the
// worlds.
func TestSearchValuesThroughTheRegistry(t *testing.T) {
	reg := games.Default()
	typ, err := reg.Lookup(card.GameName)
	require.NoError(t, err)
	g, err := typ.New(map[string]any{"players": 4})
	require.NoError(t, err)
	b, err := reg.NewBot(g, "search")
	require.NoError(t, err)
	sm, ok := b.(env.Sampler)
	require.True(t, ok, "the search bot is no env.Sampler")
	v, ok := sm.WithSamples(3).(env.ActionValuer)
	require.True(t, ok, "the search bot with 3 worlds is no env.ActionValuer")
	require.Equal(t, 3, v.(card.SearchBot).Worlds)

	s := g.NewInitialState(5)
	rng := env.NewRNG(1, 0)
	for range 7 { // a few plays in, so the seats' hands differ in size
		require.NoError(t, s.ApplyAction(env.RandomBot{}.Act(s, &rng)))
	}
	legal := env.LegalActions(s)
	require.Greater(t, len(legal), 1)
	before := s.Serialize()

	got := make([]float64, len(legal))
	r1 := env.NewRNG(2, 0)
	card.SearchBot{Worlds: 3, Workers: 4}.ActionValues(s, &r1, legal, got)
	want := make([]float64, len(legal))
	r2 := env.NewRNG(2, 0)
	card.SearchBot{Worlds: 3, Workers: 1}.Values(s.(*card.SpielState).S, &r2, legal, want)
	require.Equal(t, want, got)
	require.Equal(t, r2, r1, "ActionValues drew other numbers than Values")
	require.Equal(t, before, s.Serialize(), "ActionValues changed the state")

	viaReg := make([]float64, len(legal))
	r3 := env.NewRNG(2, 0)
	v.ActionValues(s, &r3, legal, viaReg)
	require.Equal(t, want, viaReg)
	require.False(t, slices.Equal(want, make([]float64, len(legal))), "every value is 0")
}
