package env_test

// The one batch engine, for every game: every game of games.Default() and
// the test game steps with zero heap allocations (plain, packed, and into
// an observation target) and gives the same bytes with 1 and 4 workers.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/env/testgame"
)

// everyGame is games.Default() with the test game (unless it is there).
func everyGame(tb testing.TB) *env.Registry {
	tb.Helper()
	reg := games.Default()
	if _, err := reg.Lookup(testgame.Name); err != nil {
		if err := testgame.Register(reg); err != nil {
			tb.Fatal(err)
		}
	}
	return reg
}

// engineBytes is every output of v as bytes (the observation target's
// rows, when one is set, are v.Obs()).
func engineBytes(v env.Vec) []byte {
	out := append([]byte{}, v.Obs()...)
	out = append(out, v.ObsBits()...)
	out = append(out, v.ObsExtra()...)
	out = append(out, v.MaskBits()...)
	out = append(out, v.Mask()...)
	for _, p := range v.Player() {
		out = append(out, byte(p))
	}
	for _, r := range v.Rewards() {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(r))
	}
	out = append(out, v.Done()...)
	for _, s := range v.Scores() {
		out = binary.LittleEndian.AppendUint32(out, uint32(s))
	}
	for _, e := range v.Episode() {
		out = binary.LittleEndian.AppendUint64(out, uint64(e))
	}
	return out
}

// pick fills actions with a uniform legal action per env from the masks,
// and Skip for every 7th env (shifted each call). It does not allocate.
func pick(mask []uint8, actions []int32, rng *env.RNG, call int) {
	na := len(mask) / len(actions)
	for i := range actions {
		if (i+call)%7 == 0 {
			actions[i] = env.Skip
			continue
		}
		row := mask[i*na : (i+1)*na]
		n := 0
		for _, m := range row {
			n += int(m)
		}
		k := rng.IntN(n)
		for a, m := range row {
			if m == 1 {
				if k == 0 {
					actions[i] = int32(a)
					break
				}
				k--
			}
		}
	}
}

func TestEngineEveryGameWorkersAndAllocations(t *testing.T) {
	reg := everyGame(t)
	const n = 256 // 4 chunks of 64: four workers do step
	for _, name := range reg.Names() {
		typ, err := reg.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		g, err := typ.Default()
		if err != nil {
			t.Fatal(err)
		}
		type table struct {
			name     string
			learners []int
			opponent string
		}
		tables := []table{{name: "self-play"}}
		for _, bot := range reg.Bots(name) {
			b, err := reg.NewBot(g, bot)
			if err != nil {
				t.Fatal(err)
			}
			if env.IsCostly(b) { // thinks for milliseconds a move: not for this many steps
				continue
			}
			tables = append(tables, table{"seat 0 against " + bot, []int{0}, bot})
		}
		for _, tb := range tables {
			for _, out := range []string{"plain", "packed", "target"} {
				t.Run(fmt.Sprintf("%s/%s/%s", name, tb.name, out), func(t *testing.T) {
					var vs [2]env.Vec
					var targets [2][]uint8
					for k, workers := range []int{1, 4} {
						cfg := env.VecConfig{NumEnvs: n, Seed: 7, LearnerSeats: tb.learners, Opponent: tb.opponent,
							Workers: workers, Packed: out == "packed", Reward: env.RewardZeroSum}
						if tb.opponent != "" {
							if cfg.Bot, err = reg.NewBot(g, tb.opponent); err != nil {
								t.Fatal(err)
							}
						}
						v, err := env.NewVec(g, cfg)
						if err != nil {
							t.Fatal(err)
						}
						t.Cleanup(v.Close)
						if out == "target" {
							targets[k] = make([]uint8, len(v.Obs()))
							if err := v.SetObsTarget(targets[k]); err != nil {
								t.Fatal(err)
							}
							v.Reset(7)
						}
						vs[k] = v
					}
					if !bytes.Equal(engineBytes(vs[0]), engineBytes(vs[1])) {
						t.Fatalf("after the reset: 1 and 4 workers differ")
					}
					rng := env.NewRNG(7, 7)
					actions := make([]int32, n)
					calls, done := 0, 0
					step := func() {
						calls++
						pick(vs[0].Mask(), actions, &rng, calls)
						for _, v := range vs {
							if err := v.Step(actions); err != nil {
								t.Fatal(err)
							}
						}
					}
					for done < n { // past games' ends and auto-resets
						if calls == 2000 {
							t.Fatalf("only %d games ended in %d steps", done, calls)
						}
						step()
						if !bytes.Equal(engineBytes(vs[0]), engineBytes(vs[1])) {
							t.Fatalf("step %d: 1 and 4 workers differ", calls)
						}
						for _, d := range vs[0].Done() {
							done += int(d)
						}
					}
					if out == "target" && !bytes.Equal(vs[1].Obs(), targets[1]) {
						t.Fatalf("Obs() is not the target")
					}
					if allocs := testing.AllocsPerRun(50, step); allocs != 0 {
						t.Errorf("Step allocates %v times per call (two engines, 1 and 4 workers), want 0", allocs)
					}
				})
			}
		}
	}
}
