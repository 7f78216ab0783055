package card

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/davidgoliath/dgenv/env"
)

// These tests moved with ChanceState from cmd/libdgenv/spiel_test.go; the
// checks every explicit-chance game passes are envtest.ChanceConformance's.

// newSpielState is the first node of a game of p.
func newSpielState(p Params) (*ChanceState, error) {
	g, err := NewGame(p)
	if err != nil {
		return nil, err
	}
	return (&SpielGame{G: g, t: SpielType()}).newChanceState(), nil
}

// deserializeSpiel reads a ChanceState's text for a game of p.
func deserializeSpiel(p Params, text string) (*ChanceState, error) {
	g, err := NewGame(p)
	if err != nil {
		return nil, err
	}
	return (&SpielGame{G: g, t: SpielType()}).deserializeChance(text)
}

// playRandom plays a whole game from st with rng, calling check at every node.
func playRandom(t *testing.T, st *ChanceState, rng *env.RNG, check func(*ChanceState)) {
	t.Helper()
	for !st.IsTerminal() {
		check(st)
		legal := st.AppendLegalActions(nil)
		if len(legal) == 0 {
			t.Fatalf("no legal action at a non-terminal node:\n%s", st)
		}
		if err := st.ApplyAction(int(legal[rng.IntN(len(legal))])); err != nil {
			t.Fatalf("apply: %v", err)
		}
	}
	check(st)
}

func tensors(st *ChanceState, player int) ([]float32, []float32) {
	info := st.sg.ChanceInfo()
	o := make([]float32, info.ObservationTensorSize)
	i := make([]float32, info.InformationStateTensorSize)
	st.ObservationTensor(player, o)
	st.InformationStateTensor(player, i)
	return o, i
}

func TestSpielGamesFollowOpenSpielsConventions(t *testing.T) {
	for p := MinPlayers; p <= MaxPlayers; p++ {
		t.Run(fmt.Sprintf("%d players", p), func(t *testing.T) {
			for game := range 3 {
				st, err := newSpielState(Params{Players: p, Deals: 2, FirstDealer: game % p})
				if err != nil {
					t.Fatal(err)
				}
				rng := env.NewRNG(uint64(game), uint64(p))
				chance, decisions := 0, 0
				sum := make([]float64, p)
				playRandom(t, st, &rng, func(st *ChanceState) {
					cur := st.CurrentPlayer()
					if cur >= 0 || st.IsTerminal() { // rewards since the last decision, as OpenSpiel sums them
						for i := range p {
							sum[i] += st.rewards[i]
						}
					}
					switch {
					case cur == env.ChancePlayer:
						chance++
					case cur >= 0:
						decisions++
					}
					if st.IsTerminal() {
						return
					}
					if !slices.IsSorted(st.AppendLegalActions(nil)) {
						t.Fatalf("legal actions not sorted: %v", st.AppendLegalActions(nil))
					}
					c := st.clone()
					if c.Serialize() != st.Serialize() || c.String() != st.String() {
						t.Fatal("clone differs from its original")
					}
					d, err := deserializeSpiel(st.prm, st.Serialize())
					if err != nil {
						t.Fatalf("deserialize: %v", err)
					}
					if d.String() != st.String() || d.CurrentPlayer() != cur {
						t.Fatal("deserialized state differs")
					}
				})
				if want := 2 * 15 * p; chance != want || decisions != want {
					t.Errorf("%d chance nodes and %d decisions, want %d of each", chance, decisions, want)
				}
				ret := make([]float64, p)
				st.WriteReturns(ret)
				for i := range p {
					if sum[i] != ret[i] {
						t.Errorf("seat %d: rewards add up to %v, returns %v", i, sum[i], ret[i])
					}
				}
			}
		})
	}
}

// TestResampleKeepsWhatThePlayerKnowsAndRedealsTheRest checks, at every node
// of random games, that a resampled state shows the player exactly what it
// knew (both tensors and both strings), is itself a consistent game
// (replaying its serialization gives it back, it plays to the end), and that
// the hidden cards do change.
func TestResampleKeepsWhatThePlayerKnowsAndRedealsTheRest(t *testing.T) {
	for p := MinPlayers; p <= MaxPlayers; p++ {
		t.Run(fmt.Sprintf("%d players", p), func(t *testing.T) {
			st, _ := newSpielState(Params{Players: p, Deals: 2})
			rng := env.NewRNG(7, uint64(p))
			changed, nodes := 0, 0
			playRandom(t, st, &rng, func(st *ChanceState) {
				nodes++
				if nodes%7 != 0 {
					return
				}
				for player := range p {
					r, err := st.resample(player, rng.Uint64())
					if err != nil {
						t.Fatalf("resample: %v", err)
					}
					o1, i1 := tensors(st, player)
					o2, i2 := tensors(r, player)
					if !slices.Equal(o1, o2) || !slices.Equal(i1, i2) {
						t.Fatalf("player %d's tensors differ in the resampled state", player)
					}
					if st.ObservationString(player) != r.ObservationString(player) || st.InformationStateString(player) != r.InformationStateString(player) {
						t.Fatalf("player %d's strings differ:\n%s\n---\n%s", player, st.InformationStateString(player), r.InformationStateString(player))
					}
					if r.CurrentPlayer() != st.CurrentPlayer() || len(r.hist) != len(st.hist) {
						t.Fatal("resampled state is at another node")
					}
					if d, err := deserializeSpiel(r.prm, r.Serialize()); err != nil || d.String() != r.String() {
						t.Fatalf("resampled state does not replay: %v", err)
					}
					if r.String() != st.String() {
						changed++
					}
					c := r.clone()
					rr := env.NewRNG(1, 2)
					playRandom(t, c, &rr, func(*ChanceState) {})
				}
			})
			if changed == 0 {
				t.Error("resampling never changed a hidden card")
			}
		})
	}
}

func TestSpielRefusesIllegalActionsAndBadText(t *testing.T) {
	st, _ := newSpielState(Params{Players: 3})
	if err := st.ApplyAction(89); !errors.Is(err, ErrIllegalAction) { // purple 18 is not in the 3-player deck
		t.Errorf("apply(89) at the deal = %v, want an illegal action", err)
	}
	for _, text := range []string{"", "david-goliath-spiel v1\nparams 4 4 0\nactions", "david-goliath-spiel v1\nparams 3 3 0\nactions 0 0",
		"david-goliath-spiel v1\nparams 3 3 0\nactions x"} {
		if _, err := deserializeSpiel(Params{Players: 3, Deals: 3}, text); !errors.Is(err, ErrBadSerialization) {
			t.Errorf("deserialize(%q) = %v, want ErrBadSerialization", text, err)
		}
	}
}

func TestRolloutsEndGamesAndAverageTheirReturns(t *testing.T) {
	st, _ := newSpielState(Params{Players: 4, Deals: 2})
	sum := make([]float64, 4)
	env.RandomRollout(st, 3, 1, sum)
	total := 0.0
	for _, v := range sum {
		total += v
	}
	if total <= 0 {
		t.Fatalf("rollout returns %v: three whole games score points", sum)
	}
	if st.CurrentPlayer() != env.ChancePlayer || len(st.hist) != 0 {
		t.Fatal("rollout changed the state it started from")
	}
}

// TestResampleWhileDealingRedealsTheUndealtCardsToo: during a deal, which
// cards are still undealt is as hidden from a player as the others' cards,
// so resampled worlds must differ in it as well.
func TestResampleWhileDealingRedealsTheUndealtCardsToo(t *testing.T) {
	st, _ := newSpielState(Params{Players: 4, Deals: 1})
	for range 20 { // 5 cards each
		legal := st.AppendLegalActions(nil)
		if err := st.ApplyAction(int(legal[0])); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for seed := range uint64(20) {
		r, err := st.resample(1, seed)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(r.dealt[1], st.dealt[1]) {
			t.Fatalf("player 1's cards changed: %v, want %v", r.dealt[1], st.dealt[1])
		}
		seen[fmt.Sprint(r.AppendLegalActions(nil))] = true
	}
	if len(seen) < 2 {
		t.Error("the undealt cards were the same in 20 resampled worlds")
	}
}
