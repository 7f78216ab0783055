package env_test

import (
	"strings"
	"testing"

	"github.com/davidgoliath/dgenv/env"
)

// bandit is a one-decision game of hidden information for the search's
// tests: seat 0 pulls one of arms arms; arm 0 (what armZero plays, the
// playouts' bot) pays 0, arm 1 pays +1 with probability 0.5+edge and -1
// otherwise, every other arm +1 or -1 evenly: decoys whose mean equals
// arm 0's. What an arm pays depends on the world, a number hidden from
// the seat that ResampleWorld draws anew. Only the methods the search
// calls are implemented (the embedded interfaces are nil).
type bandit struct {
	env.State
	arms   int
	edge   float64
	world  uint64 // hidden: what each arm pays
	pulled int    // -1 until the decision
	tail   int    // forced actions (0, by seat 0) after the pull before the end
	pulls  *int   // actions applied, over every copy
}

type banditGame struct{ env.Game }

func (banditGame) NumPlayers() int                  { return 2 }
func (banditGame) Type() *env.Type                  { return &env.Type{Name: "bandit"} }
func (banditGame) NewInitialState(uint64) env.State { return newBandit(2, 0) }

func newBandit(arms int, edge float64) *bandit {
	return &bandit{arms: arms, edge: edge, pulled: -1, pulls: new(int)}
}

func (b *bandit) Game() env.Game { return banditGame{} }
func (b *bandit) CurrentPlayer() int {
	if b.IsTerminal() {
		return -1
	}
	return 0
}
func (b *bandit) IsTerminal() bool { return b.pulled >= 0 && b.tail == 0 }
func (b *bandit) AppendLegalActions(dst []int) []int {
	if b.pulled >= 0 {
		return append(dst, 0)
	}
	for a := range b.arms {
		dst = append(dst, a)
	}
	return dst
}
func (b *bandit) ApplyUnchecked(a int) {
	*b.pulls++
	if b.pulled >= 0 {
		b.tail--
		return
	}
	b.pulled = a
}
func (b *bandit) Clone() env.State { c := *b; return &c }
func (b *bandit) ResampleWorld(_ int, rng *env.RNG) env.State {
	c := *b
	c.world = rng.Uint64()
	return &c
}

// WriteReturns pays the arm pulled in this world: a decoy's coin is one
// bit of the world, arm 1's a uniform draw from the world below
// 0.5+edge.
func (b *bandit) WriteReturns(dst []float64) {
	dst[0], dst[1] = 0, 0
	r := env.NewRNG(b.world, uint64(b.pulled))
	switch u := r.Float64(); {
	case b.pulled <= 0:
	case b.pulled == 1 && u < 0.5+b.edge, b.pulled > 1 && u < 0.5:
		dst[0] = 1
	default:
		dst[0] = -1
	}
	dst[1] = -dst[0]
}

// armZero pulls arm 0: the playouts' bot, whose choice the margin keeps.
type armZero struct{}

func (armZero) Act(env.State, *env.RNG) int { return 0 }

// estBandit is a bandit whose states estimate their returns before the
// end (env.Estimator): arm 2 looks like a sure win until the game is
// over.
type estBandit struct{ *bandit }

func (e estBandit) Clone() env.State { return estBandit{e.bandit.Clone().(*bandit)} }
func (e estBandit) ResampleWorld(p int, rng *env.RNG) env.State {
	return estBandit{e.bandit.ResampleWorld(p, rng).(*bandit)}
}
func (e estBandit) EstimateReturns(dst []float64) {
	if e.IsTerminal() {
		e.WriteReturns(dst)
		return
	}
	dst[0], dst[1] = 0, 0
	if e.pulled == 2 {
		dst[0], dst[1] = 1, -1
	}
}

// With a Horizon the playouts stop there and take the state's estimate:
// with a horizon short of the end the search pulls arm 2, which only the
// estimate favours, and each playout plays Horizon actions; without one
// it pulls arm 1, the real gain, and plays to the end.
func TestSearchHorizonTakesTheEstimate(t *testing.T) {
	for _, c := range []struct {
		horizon, want, actions int
	}{
		{horizon: 3, want: 2, actions: 3},
		{horizon: 0, want: 1, actions: 6},
		{horizon: 6, want: 1, actions: 6}, // over before the horizon
	} {
		b := newBandit(3, 0.45)
		b.tail = 5
		s := &env.Search{Worlds: 16, Rollout: armZero{}, Z: 2, Horizon: c.horizon}
		rng := env.NewRNG(3, 3)
		if a := s.Act(estBandit{b}, &rng); a != c.want {
			t.Errorf("Horizon %d: pulled %d, want %d", c.horizon, a, c.want)
		}
		if want := 16 * 3 * c.actions; *b.pulls != want {
			t.Errorf("Horizon %d: %d actions played, want %d (16 worlds x 3 arms x %d)", c.horizon, *b.pulls, want, c.actions)
		}
	}
}

// SearchFactory refuses a horizon for a game whose states do not
// estimate, naming env.Estimator.
func TestSearchFactoryRefusesAHorizonWithoutEstimates(t *testing.T) {
	if _, err := env.SearchFactory(env.Search{Horizon: 4}, nil)(banditGame{}); err == nil || !strings.Contains(err.Error(), "env.Estimator") {
		t.Fatalf("SearchFactory(Horizon 4) on a game without estimates: %v, want an error naming env.Estimator", err)
	}
	if _, err := env.SearchFactory(env.Search{}, nil)(banditGame{}); err != nil {
		t.Fatalf("SearchFactory without a horizon: %v", err)
	}
}

// parityBandit's worlds explain the opponent's plays (env.Inferrer) when
// even; arm 1 wins in even worlds and loses in odd ones.
// With unlike, no world explains them: the opponent plays unlike the
// model.
type parityBandit struct {
	*bandit
	unlike bool
}

func (p parityBandit) Clone() env.State { return parityBandit{p.bandit.Clone().(*bandit), p.unlike} }
func (p parityBandit) ResampleWorld(pl int, rng *env.RNG) env.State {
	return parityBandit{p.bandit.ResampleWorld(pl, rng).(*bandit), p.unlike}
}
func (p parityBandit) WriteReturns(dst []float64) {
	dst[0], dst[1] = 0, 0
	if p.pulled == 1 {
		dst[0] = float64(1 - 2*int(p.world%2))
	}
	dst[1] = -dst[0]
}
func (p parityBandit) Infer(int, env.Bot) func(env.State) int {
	if p.unlike {
		return func(env.State) int { *p.pulls += 1000; return 1 }
	}
	return func(w env.State) int { return int(w.(parityBandit).world % 2) }
}

// With Infer the search keeps, of up to Infer candidates a world, one
// that explains the plays: here the even worlds, where arm 1 wins; drawn
// plainly, half the worlds are odd and arm 1 gains nothing on average.
func TestSearchInferPrefersWorldsThatExplainThePlays(t *testing.T) {
	const n = 40
	pulled := func(infer int) (arm1 int) {
		for i := range n {
			b := newBandit(2, 0)
			rng := env.NewRNG(uint64(i), 5)
			if (&env.Search{Worlds: 16, Rollout: armZero{}, Z: 2, Infer: infer}).Act(parityBandit{b, false}, &rng) == 1 {
				arm1++
			}
		}
		return arm1
	}
	if plain, inferred := pulled(0), pulled(8); plain > n/10 || inferred < n*9/10 {
		t.Errorf("arm 1 pulled in %d of %d decisions without Infer (want at most %d), %d with Infer 8 (want at least %d)", plain, n, n/10, inferred, n*9/10)
	}
}

// Opponents unlike the model leave every candidate unexplained: the
// search then stops inferring after 8 worlds' Infer candidates, not
// Infer candidates for each of its worlds.
func TestSearchInferGivesUpOnAnUnexplainedOpponent(t *testing.T) {
	b := newBandit(2, 0)
	rng := env.NewRNG(1, 5)
	(&env.Search{Worlds: 16, Rollout: armZero{}, Z: 2, Infer: 8}).Act(parityBandit{b, true}, &rng)
	if checks := *b.pulls / 1000; checks != 8*8 {
		t.Errorf("%d candidates checked, want 64 (8 for each of the first 8 worlds, then none)", checks)
	}
}

// countingArm pulls its arm and counts the states it was asked about.
type countingArm struct {
	arm   int
	asked int
}

func (c *countingArm) Act(env.State, *env.RNG) int { c.asked++; return c.arm }

// Keep chooses the action kept under the margin (Rollout's when nil),
// asked once a decision; the playouts stay Rollout's.
func TestSearchKeepChoosesTheKeptAction(t *testing.T) {
	for _, c := range []struct {
		keep *countingArm
		want int
	}{{nil, 0}, {&countingArm{arm: 2}, 2}, {&countingArm{arm: 1}, 1}} {
		b := newBandit(3, 0)
		b.tail = 2
		roll := &countingArm{arm: 0}
		s := &env.Search{Worlds: 8, Rollout: roll, Z: 100}
		if c.keep != nil {
			s.Keep = c.keep
		}
		rng := env.NewRNG(5, 5)
		if a := s.Act(b, &rng); a != c.want {
			t.Errorf("Keep %v: pulled %d, want %d", c.keep, a, c.want)
		}
		if c.keep != nil && c.keep.asked != 1 {
			t.Errorf("Keep asked %d times, want once a decision", c.keep.asked)
		}
		// the playouts' forced actions are Rollout's: 8 worlds x 3 arms x 2
		if want := 8 * 3 * 2; roll.asked < want {
			t.Errorf("Rollout asked %d times, want at least %d (the playouts)", roll.asked, want)
		}
	}
}
