package card_test

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
)

// seatBot plays the first legal card and counts the calls for its seat
// and for any other seat (which must never happen).
type seatBot struct {
	seat        int
	mine, wrong *atomic.Int64
}

// Act implements env.Bot.
func (b seatBot) Act(s env.State, rng *env.RNG) int { return b.ActState(s.(*card.SpielState).S, rng) }

func (b seatBot) ActState(s *card.State, rng *env.RNG) card.Action {
	if s.CurrentPlayer() == b.seat {
		b.mine.Add(1)
	} else {
		b.wrong.Add(1)
	}
	return s.LegalActions()[0]
}

// Each seat of a table of different bots is played by its own bot, and
// only by it.
func TestVecPerSeatOpponentsPlayTheirSeats(t *testing.T) {
	var mine, wrong [4]atomic.Int64
	opponents := make([]string, 4)
	bots := make([]card.StateBot, 4)
	for _, s := range []int{1, 3} {
		opponents[s] = fmt.Sprintf("test-seat-%d", s)
		bots[s] = seatBot{seat: s, mine: &mine[s], wrong: &wrong[s]}
	}
	for _, seats := range [][]int{{0, 2}, nil} { // given, or read from the empty entries
		v := newVec(t, vecConfig{Params: card.Params{Players: 4, Deals: 1}, NumEnvs: 8, Workers: 2,
			LearnerSeats: seats, Opponents: opponents, Bots: bots})
		if got := v.LearnerSeats(); !slices.Equal(got, []int{0, 2}) {
			t.Errorf("LearnerSeats() = %v, want [0 2]", got)
		}
		rng := env.NewRNG(3, 3)
		actions := make([]int32, 8)
		for range 200 {
			for i, p := range v.Player() {
				if p != 0 && p != 2 {
					t.Fatalf("env %d: seat %d to act, a bot seat", i, p)
				}
			}
			chooseFromMask(v.Mask(), actions, &rng)
			if err := v.Step(actions); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, s := range []int{1, 3} {
		if mine[s].Load() == 0 || wrong[s].Load() != 0 {
			t.Errorf("seat %d's bot: %d moves for its seat, %d for others; want some and none", s, mine[s].Load(), wrong[s].Load())
		}
	}
}

// A list naming the same bot for every other seat plays exactly as that
// bot given as the one opponent.
func TestVecOpponentsOfOneBotEqualOpponent(t *testing.T) {
	base := vecConfig{Params: card.Params{Players: 5, Deals: 2}, NumEnvs: 16, Seed: 9, Workers: 2, LearnerSeats: []int{2}}
	one, list := base, base
	one.Opponent = "heuristic"
	list.Opponents = []string{"heuristic", "heuristic", "", "heuristic", "heuristic"}
	a, b := newVec(t, one), newVec(t, list)
	rng := env.NewRNG(4, 4)
	actions := make([]int32, 16)
	for step := range 150 {
		chooseFromMask(a.Mask(), actions, &rng)
		if err := a.Step(actions); err != nil {
			t.Fatal(err)
		}
		if err := b.Step(actions); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.Obs(), b.Obs()) || !slices.Equal(a.Rewards(), b.Rewards()) || !slices.Equal(a.Scores(), b.Scores()) {
			t.Fatalf("step %d: opponents of one bot differ from opponent", step)
		}
	}
}

func TestVecOpponentsErrors(t *testing.T) {
	ok := vecConfig{Params: card.Params{Players: 4}, NumEnvs: 2}
	for name, edit := range map[string]func(*vecConfig){
		"a list too short": func(c *vecConfig) { c.Opponents = []string{"", "random", "random"} },
		"an empty list":    func(c *vecConfig) { c.Opponents = []string{} },
		"both opponent and a list": func(c *vecConfig) {
			c.Opponent = "random"
			c.Opponents = []string{"", "random", "random", "random"}
		},
		"a bot on a learner seat": func(c *vecConfig) {
			c.LearnerSeats = []int{0, 1}
			c.Opponents = []string{"", "random", "random", "random"}
		},
		"no bot on a bot seat": func(c *vecConfig) {
			c.LearnerSeats = []int{0}
			c.Opponents = []string{"", "random", "", "random"}
		},
		"a bot on every seat": func(c *vecConfig) { c.Opponents = []string{"random", "random", "random", "random"} },
		"an unknown bot":      func(c *vecConfig) { c.Opponents = []string{"", "random", "grandmaster", "random"} },
		"bots without their names": func(c *vecConfig) {
			c.Opponents = []string{"", "random", "random", "random"}
			c.Bots = []card.StateBot{nil, card.RandomBot{}}
		},
	} {
		t.Run(name+" is refused", func(t *testing.T) {
			c := ok
			edit(&c)
			if v, err := newVecEnv(c); err == nil {
				v.Close()
				t.Errorf("NewVecEnv(%+v) error = nil, want one", c)
			}
		})
	}
}
