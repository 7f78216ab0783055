package duel

import (
	"math"
	"testing"

	"github.com/davidgoliath/dgenv/env"
)

func newChance(t *testing.T, maxRounds int) *ChanceState {
	t.Helper()
	g, err := SpielType().New(map[string]any{"max_rounds": maxRounds})
	if err != nil {
		t.Fatal(err)
	}
	return g.(*SpielGame).newChanceState()
}

// step applies a chance outcome by its probability or a random legal action.
func step(t *testing.T, c *ChanceState, rng *env.RNG) {
	t.Helper()
	legal := c.AppendLegalActions(nil)
	a := legal[rng.IntN(len(legal))]
	if c.CurrentPlayer() == env.ChancePlayer {
		a = env.SampleChance(c.AppendChanceOutcomes(nil), rng.Float64())
	}
	if err := c.ApplyAction(a); err != nil {
		t.Fatal(err)
	}
}

// The set-up: 4 obstacle nodes over the free squares of ranks 3..6, then
// the hands drawn card by card with the deck's odds, and State holds
// exactly the cards the outcomes named.
func TestTheSetUpIsChanceNodesThatDriveState(t *testing.T) {
	c := newChance(t, 100)
	for i := range NumRocks + NumTrees {
		out := c.AppendChanceOutcomes(nil)
		if c.CurrentPlayer() != env.ChancePlayer || len(out) != 32-i || c.ChanceRun() != 4-i {
			t.Fatalf("obstacle %d: player %d, %d outcomes, run %d", i, c.CurrentPlayer(), len(out), c.ChanceRun())
		}
		if out[0].Action < 2*BoardSize || out[len(out)-1].Action >= 6*BoardSize {
			t.Fatalf("obstacle squares %v outside ranks 3..6", out)
		}
		if err := c.ApplyAction(out[len(out)-1-i].Action); err != nil {
			t.Fatal(err)
		}
	}
	out := c.AppendChanceOutcomes(nil)
	if len(out) != NumKinds || c.ChanceRun() != 0 {
		t.Fatalf("first draw: %d outcomes (run %d), want every kind", len(out), c.ChanceRun())
	}
	for _, o := range out {
		if math.Abs(o.Prob-float64(Copies[o.Action])/DeckSize) > 1e-12 {
			t.Fatalf("draw of %s: probability %v, want %d/%d", KindNames[o.Action], o.Prob, Copies[o.Action], DeckSize)
		}
	}
	var want [NumPlayers][NumKinds]uint8
	for i := 0; c.CurrentPlayer() == env.ChancePlayer; i++ {
		out := c.AppendChanceOutcomes(nil)
		k := out[(5*i)%len(out)].Action
		if c.sc.node.kind != nodeDraw {
			t.Fatalf("set-up node %d is %+v, want a draw", i, c.sc.node)
		}
		want[c.sc.node.seat][k]++
		if err := c.ApplyAction(k); err != nil {
			t.Fatal(err)
		}
	}
	if c.s.t.hand != want || c.s.t.deckLen != DeckSize-2*StartHand-2 {
		t.Fatalf("State's hands %v (deck %d), want the drawn %v", c.s.t.hand, c.s.t.deckLen, want)
	}
}

// A disarm is a chance node over the disarmed hand, by its counts; the
// round's draw nodes show no decision in the observation's phase section.
func TestDisarmAndDrawNodes(t *testing.T) {
	rng := env.NewRNG(3, 4)
	disarms, draws := 0, 0
	for game := 0; game < 40 && (disarms < 3 || draws < 3); game++ {
		c := newChance(t, 100)
		for !c.IsTerminal() {
			if c.pending && c.sc.node.kind == nodeDisarm {
				disarms++
				o := c.sc.node.seat
				total := 0.0
				for _, oc := range c.AppendChanceOutcomes(nil) {
					want := float64(c.sc.snap.hand[o][oc.Action]) / float64(c.sc.snap.handSize[o])
					if oc.Prob != want {
						t.Fatalf("disarm of %s: probability %v, want %v", KindNames[oc.Action], oc.Prob, want)
					}
					total += oc.Prob
				}
				if math.Abs(total-1) > 1e-12 {
					t.Fatalf("disarm outcomes add up to %v", total)
				}
			}
			if c.pending && c.sc.node.kind == nodeDraw && c.sc.snap.stage == stDraw && c.sc.snap.round > 0 {
				draws++
				obs := make([]float32, ObsSize)
				c.ObservationTensor(David, obs)
				for i, v := range obs[OffPhase : OffPhase+phaseLen] {
					if v != 0 {
						t.Fatalf("the draw phase's chance node shows phase slot %d = %v", i, v)
					}
				}
			}
			step(t, c, &rng)
		}
	}
	if disarms < 3 || draws < 3 {
		t.Fatalf("%d disarm and %d draw-phase nodes in 40 games, want 3 of each", disarms, draws)
	}
}

// ResampleFromInfostate deals the opponent's cards anew (not only keeps the
// true world), and the resampled world's history replays.
func TestResampleDealsTheOpponentsHandAnew(t *testing.T) {
	rng := env.NewRNG(8, 9)
	tries, changed := 0, 0
	for game := range 2 {
		c := newChance(t, 100)
		for n := 0; !c.IsTerminal(); n++ {
			if n%11 == 5 {
				for player := range NumPlayers {
					r, err := c.ResampleFromInfostate(player, uint64(1000*game+n))
					if err != nil {
						t.Fatal(err)
					}
					tries++
					if r.(*ChanceState).view().t.hand[1-player] != c.view().t.hand[1-player] {
						changed++
					}
				}
			}
			step(t, c, &rng)
		}
	}
	if changed*4 < 3*tries {
		t.Fatalf("%d of %d resamples changed the opponent's hand, want at least 3 in 4", changed, tries)
	}
	t.Logf("%d of %d resamples changed the opponent's hand", changed, tries)
}
