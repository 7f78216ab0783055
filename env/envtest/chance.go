package envtest

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/davidgoliath/dgenv/env"
)

// ChanceConformance plays games random games of g's explicit-chance states
// (env.ChanceGame) and checks at every node what OpenSpiel's
// random_sim_test checks, and more: legal actions ascending and, at a
// chance node, equal to the outcomes, whose probabilities are positive and
// add up to 1 (and keep ChanceRun's promise); an illegal action is refused
// and changes nothing; a clone is equal and independent; Serialize
// round-trips; every player's tensors are written whole and finite;
// rewards read at player nodes and at the end add up to the returns, which
// lie within the utilities; and, every resampleEvery nodes, a state
// resampled for any player shows that player the same tensors, strings
// and node, and plays on to the end.
func ChanceConformance(t *testing.T, g env.ChanceGame, games, resampleEvery int) {
	t.Helper()
	info := g.ChanceInfo()
	p := g.NumPlayers()
	rng := env.NewRNG(5, 6)
	obs := make([]float32, info.ObservationTensorSize)
	ist := make([]float32, info.InformationStateTensorSize)
	sum, ret, rew := make([]float64, p), make([]float64, p), make([]float64, p)
	var legal []int
	var outcomes []env.ChanceOutcome
	for k := range games {
		s := g.NewChanceState()
		clear(sum)
		decisions, chance, nodes := 0, 0, 0
		for {
			nodes++
			cur := s.CurrentPlayer()
			if cur >= 0 || s.IsTerminal() {
				s.WriteRewards(rew)
				for i := range p {
					sum[i] += rew[i]
				}
			}
			if s.IsTerminal() {
				break
			}
			legal = s.AppendLegalActions(legal[:0])
			if len(legal) == 0 || !slices.IsSorted(legal) {
				t.Fatalf("game %d: legal actions %v: want some, ascending", k, legal)
			}
			outcomes = s.AppendChanceOutcomes(outcomes[:0])
			switch {
			case cur == env.ChancePlayer:
				chance++
				checkOutcomes(t, s, legal, outcomes, info)
			case cur >= 0 && cur < p:
				decisions++
				if len(outcomes) != 0 || s.ChanceRun() != 0 {
					t.Fatalf("player %d's node has chance outcomes %v (run %d)", cur, outcomes, s.ChanceRun())
				}
				for _, a := range legal {
					if a < 0 || a >= g.NumDistinctActions() {
						t.Fatalf("legal action %d outside 0..%d", a, g.NumDistinctActions()-1)
					}
				}
			default:
				t.Fatalf("current player %d of a game of %d that is not over", cur, p)
			}
			text := s.Serialize()
			if err := s.ApplyAction(-1); !errors.Is(err, env.ErrIllegalAction) || s.Serialize() != text {
				t.Fatalf("ApplyAction(-1) = %v, want an illegal action and nothing changed", err)
			}
			for player := range p {
				writeTensors(t, s, player, obs, ist)
			}
			c := s.Clone()
			if c.Serialize() != text || c.String() != s.String() {
				t.Fatal("a clone differs from its original")
			}
			if err := c.ApplyAction(legal[0]); err != nil {
				t.Fatalf("a clone refused the legal action %d: %v", legal[0], err)
			}
			if s.Serialize() != text || c.Serialize() == text {
				t.Fatal("applying an action to a clone changed its original, or not the clone")
			}
			d, err := g.DeserializeChanceState(text)
			if err != nil {
				t.Fatalf("DeserializeChanceState(Serialize()): %v", err)
			}
			if d.Serialize() != text || d.String() != s.String() || d.CurrentPlayer() != cur ||
				!slices.Equal(d.AppendHistory(nil), s.AppendHistory(nil)) {
				t.Fatal("a deserialized copy differs from its original")
			}
			if resampleEvery > 0 && nodes%resampleEvery == 0 {
				for player := range p {
					checkResample(t, s, player, rng.Uint64(), obs, ist)
				}
			}
			a := legal[rng.IntN(len(legal))]
			if cur == env.ChancePlayer && s.ChanceRun() == 0 {
				a = env.SampleChance(outcomes, rng.Float64())
			}
			if err := s.ApplyAction(a); err != nil {
				t.Fatalf("legal action %d refused: %v", a, err)
			}
		}
		if s.CurrentPlayer() != env.TerminalPlayer || len(s.AppendLegalActions(nil)) != 0 || s.ApplyAction(0) == nil {
			t.Fatalf("a terminal state has player %d, legal actions, or takes an action", s.CurrentPlayer())
		}
		if decisions > g.MaxGameLength() || chance > info.MaxChanceNodes {
			t.Fatalf("game %d: %d decisions and %d chance nodes, want at most %d and %d", k, decisions, chance, g.MaxGameLength(), info.MaxChanceNodes)
		}
		if h := s.AppendHistory(nil); len(h) != decisions+chance {
			t.Fatalf("history of %d actions after %d", len(h), decisions+chance)
		}
		s.WriteReturns(ret)
		for i := range p {
			if math.Abs(sum[i]-ret[i]) > 1e-9 {
				t.Errorf("game %d seat %d: rewards add up to %v, returns %v", k, i, sum[i], ret[i])
			}
			if ret[i] < g.MinUtility() || ret[i] > g.MaxUtility() {
				t.Errorf("game %d seat %d: returns %v outside %v..%v", k, i, ret[i], g.MinUtility(), g.MaxUtility())
			}
		}
	}
}

// checkOutcomes checks a chance node's outcomes against its legal actions
// and its ChanceRun promise.
func checkOutcomes(t *testing.T, s env.ChanceState, legal []int, outcomes []env.ChanceOutcome, info env.ChanceInfo) {
	t.Helper()
	if len(outcomes) != len(legal) || len(outcomes) > info.MaxChanceOutcomes {
		t.Fatalf("%d chance outcomes for %d legal actions (at most %d)", len(outcomes), len(legal), info.MaxChanceOutcomes)
	}
	total := 0.0
	for i, o := range outcomes {
		if o.Action != legal[i] || !(o.Prob > 0) || o.Action < 0 || o.Action >= info.MaxChanceOutcomes {
			t.Fatalf("chance outcome %d = %+v, legal action %d", i, o, legal[i])
		}
		total += o.Prob
	}
	if math.Abs(total-1) > 1e-9 {
		t.Fatalf("chance outcomes add up to %v, want 1", total)
	}
	run := s.ChanceRun()
	if run == 0 {
		return
	}
	for _, o := range outcomes {
		if math.Abs(o.Prob-outcomes[0].Prob) > 1e-12 {
			t.Fatalf("ChanceRun %d with outcomes of unequal probabilities %v", run, outcomes)
		}
	}
	if run > len(outcomes) {
		t.Fatalf("ChanceRun %d draws more than the %d outcomes", run, len(outcomes))
	}
	c := s.Clone()
	a := legal[len(legal)/2]
	if err := c.ApplyAction(a); err != nil {
		t.Fatal(err)
	}
	if run == 1 {
		return
	}
	rest := c.AppendLegalActions(nil)
	if c.CurrentPlayer() != env.ChancePlayer || c.ChanceRun() != run-1 || !slices.Equal(rest, slices.DeleteFunc(slices.Clone(legal), func(x int) bool { return x == a })) {
		t.Fatalf("after outcome %d of a run of %d: player %d, run %d, outcomes %v; want a chance node, run %d, the others", a, run, c.CurrentPlayer(), c.ChanceRun(), rest, run-1)
	}
}

// writeTensors writes player's tensors into buffers filled with NaN and
// checks that every element was written, finite.
func writeTensors(t *testing.T, s env.ChanceState, player int, obs, ist []float32) {
	t.Helper()
	for _, b := range [][]float32{obs, ist} {
		for i := range b {
			b[i] = float32(math.NaN())
		}
	}
	s.ObservationTensor(player, obs)
	s.InformationStateTensor(player, ist)
	for _, b := range [][]float32{obs, ist} {
		for i, v := range b {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("player %d: tensor element %d = %v (not written, or not finite)", player, i, v)
			}
		}
	}
}

// checkResample checks a state resampled for player against s.
func checkResample(t *testing.T, s env.ChanceState, player int, seed uint64, obs, ist []float32) {
	t.Helper()
	r, err := s.ResampleFromInfostate(player, seed)
	if err != nil {
		t.Fatalf("ResampleFromInfostate(%d): %v", player, err)
	}
	writeTensors(t, s, player, obs, ist)
	o1, i1 := slices.Clone(obs), slices.Clone(ist)
	writeTensors(t, r, player, obs, ist)
	if !slices.Equal(o1, obs) || !slices.Equal(i1, ist) {
		t.Fatalf("player %d's tensors differ in the resampled state", player)
	}
	if s.ObservationString(player) != r.ObservationString(player) || s.InformationStateString(player) != r.InformationStateString(player) {
		t.Fatalf("player %d's strings differ in the resampled state:\n%s\n---\n%s", player, s.InformationStateString(player), r.InformationStateString(player))
	}
	if r.CurrentPlayer() != s.CurrentPlayer() || len(r.AppendHistory(nil)) != len(s.AppendHistory(nil)) {
		t.Fatalf("the resampled state is at another node")
	}
	if s.CurrentPlayer() == player && !slices.Equal(r.AppendLegalActions(nil), s.AppendLegalActions(nil)) {
		t.Fatalf("player %d's legal actions differ in the resampled state", player)
	}
	d, err := s.Game().(env.ChanceGame).DeserializeChanceState(r.Serialize())
	if err != nil || d.String() != r.String() {
		t.Fatalf("the resampled state does not replay: %v", err)
	}
	sum := make([]float64, s.Game().NumPlayers())
	if err := env.RandomRollout(r, 1, seed, sum); err != nil {
		t.Fatalf("the resampled state does not play to the end: %v", err)
	}
}
