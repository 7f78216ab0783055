package env_test

import (
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
	pulls  *int   // actions applied, over every copy
}

type banditGame struct{ env.Game }

func (banditGame) NumPlayers() int { return 2 }

func newBandit(arms int, edge float64) *bandit {
	return &bandit{arms: arms, edge: edge, pulled: -1, pulls: new(int)}
}

func (b *bandit) Game() env.Game { return banditGame{} }
func (b *bandit) CurrentPlayer() int {
	if b.pulled >= 0 {
		return -1
	}
	return 0
}
func (b *bandit) IsTerminal() bool { return b.pulled >= 0 }
func (b *bandit) AppendLegalActions(dst []int) []int {
	for a := range b.arms {
		dst = append(dst, a)
	}
	return dst
}
func (b *bandit) ApplyUnchecked(a int) { b.pulled = a; *b.pulls++ }
func (b *bandit) Clone() env.State     { c := *b; return &c }
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

// deviations counts the decisions of n (rng seeds 0..n-1) in which search
// pulls another arm than 0, and those in which it pulls arm 1.
func deviations(search *env.Search, b *bandit, n int) (other, arm1 int) {
	for i := range n {
		rng := env.NewRNG(uint64(i), 9)
		switch search.Act(b, &rng) {
		case 0:
		case 1:
			other++
			arm1++
		default:
			other++
		}
	}
	return other, arm1
}

// With many decoys, the margin alone lets the best of their noisy means
// through often (each passes 2 standard errors about 2% of the time, the
// best of 30 in about half the decisions); Confirm judges that best in
// fresh worlds, where it passes about 2% of the time.
func TestSearchConfirmStopsTheLuckiestDecoy(t *testing.T) {
	const n = 200
	b := newBandit(31, 0)
	margin, _ := deviations(&env.Search{Worlds: 16, Rollout: armZero{}, Z: 2}, b, n)
	confirmed, _ := deviations(&env.Search{Worlds: 16, Rollout: armZero{}, Z: 2, Confirm: 32}, b, n)
	t.Logf("decisions leaving arm 0 for a decoy: %d of %d with the margin alone, %d with Confirm", margin, n, confirmed)
	if margin < n/5 {
		t.Errorf("margin alone: %d of %d decisions left arm 0 for a decoy, want at least %d (the test's premise)", margin, n, n/5)
	}
	if confirmed > n/20 {
		t.Errorf("with Confirm: %d of %d decisions left arm 0 for a decoy, want at most %d", confirmed, n, n/20)
	}
}

// A real gain still gets through Confirm (arm 1 wins 90% of the time
// against arm 0's sure 0: a mean gain of 0.8, among 7 decoys), and the
// test costs 2 pulls a fresh world.
func TestSearchConfirmKeepsARealGain(t *testing.T) {
	const n = 100
	b := newBandit(9, 0.4)
	s := &env.Search{Worlds: 16, Rollout: armZero{}, Z: 2, Confirm: 32}
	_, arm1 := deviations(s, b, n)
	if arm1 < n*9/10 {
		t.Errorf("with Confirm: arm 1 pulled in %d of %d decisions, want at least %d", arm1, n, n*9/10)
	}
	*b.pulls = 0
	rng := env.NewRNG(1, 2)
	s.Act(b, &rng)
	if want := 16*9 + 2*32; *b.pulls != want {
		t.Errorf("one decision pulled %d arms, want %d (16 worlds x 9 arms, then 32 fresh worlds x 2)", *b.pulls, want)
	}
}
