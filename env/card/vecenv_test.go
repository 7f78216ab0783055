package card_test

// The vectorised env: determinism across worker counts and resets
// (EnvPool-style), the illegal-action policy, same-step auto-reset, reward
// modes, learner seats, game records and the zero-allocation step.

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
	"github.com/davidgoliath/dgenv/env/games"
)

// vecConfig is a card-game batch as the tests build it: the game's
// parameters and env.VecConfig's fields, with opponents named (made by
// games.Default()) or given as bots of this package.
type vecConfig struct {
	Params       card.Params
	NumEnvs      int
	Seed         uint64
	LearnerSeats []int
	Opponent     string
	Opponents    []string
	Reward       env.RewardMode
	Workers      int
	Packed       bool
	Bot          card.StateBot   // plays the opponent seats, named Opponent (instead of the registry's)
	Bots         []card.StateBot // the bots of Opponents (instead of the registry's)
}

// vecEnv is the engine (env.NewVec) of a card-game batch, with the card
// game's views of it: env k's *card.State, the layout, the game and its
// records.
type vecEnv struct {
	env.Vec
	g   *card.Game
	cfg vecConfig
}

func (v *vecEnv) State(k int) *card.State { return v.Vec.State(k).(*card.SpielState).S }
func (v *vecEnv) Layout() card.Layout     { return v.g.ObservationLayout() }
func (v *vecEnv) Game() *card.Game        { return v.g }
func (v *vecEnv) Config() vecConfig       { return v.cfg }

// Record is env.Vec's Record as the card game's records (Extra).
func (v *vecEnv) Record(k int) (finished, current *card.Record, err error) {
	f, c, err := v.Vec.Record(k)
	if err != nil {
		return nil, nil, err
	}
	if f != nil {
		finished = f.Extra.(*card.Record)
	}
	return finished, c.Extra.(*card.Record), nil
}

// newVecEnv builds cfg's batch through the registry and env.NewVec, as a
// server does.
func newVecEnv(cfg vecConfig) (*vecEnv, error) {
	cg, err := card.NewGame(cfg.Params)
	if err != nil {
		return nil, err
	}
	cfg.Params = cg.Params()
	reg := games.Default()
	typ, err := reg.Lookup(card.GameName)
	if err != nil {
		return nil, err
	}
	g, err := typ.New(map[string]any{"players": cfg.Params.Players, "deals": cfg.Params.Deals, "first_dealer": cfg.Params.FirstDealer})
	if err != nil {
		return nil, err
	}
	ec := env.VecConfig{NumEnvs: cfg.NumEnvs, Seed: cfg.Seed, LearnerSeats: cfg.LearnerSeats, Opponent: cfg.Opponent,
		Opponents: cfg.Opponents, Reward: cfg.Reward, Workers: cfg.Workers, Packed: cfg.Packed}
	switch {
	case cfg.Bot != nil:
		ec.Bot = cfg.Bot
	case cfg.Opponent != "":
		if ec.Bot, err = reg.NewBot(g, cfg.Opponent); err != nil {
			return nil, err
		}
	}
	switch {
	case cfg.Bots != nil:
		ec.Bots = make([]env.Bot, len(cfg.Bots))
		for s, b := range cfg.Bots {
			if b != nil {
				ec.Bots[s] = b
			}
		}
	case cfg.Opponents != nil:
		if ec.Bots, err = reg.NewSeatBots(g, cfg.Opponents); err != nil {
			return nil, err
		}
	}
	v, err := env.NewVec(g, ec)
	if err != nil {
		return nil, err
	}
	return &vecEnv{Vec: v, g: cg, cfg: cfg}, nil
}

func newVec(tb testing.TB, cfg vecConfig) *vecEnv {
	tb.Helper()
	v, err := newVecEnv(cfg)
	if err != nil {
		tb.Fatalf("newVecEnv(%+v) error = %v", cfg, err)
	}
	tb.Cleanup(v.Close)
	return v
}

// chooseFromMask fills actions with a uniformly random legal action per env,
// read from the mask buffer as a client would. It does not allocate.
func chooseFromMask(mask []uint8, actions []int32, rng *env.RNG) {
	for i := range actions {
		row := mask[i*card.NumActions : (i+1)*card.NumActions]
		n := 0
		for _, m := range row {
			n += int(m)
		}
		k := rng.IntN(n)
		for a, m := range row {
			if m != 0 {
				if k == 0 {
					actions[i] = int32(a)
					break
				}
				k--
			}
		}
	}
}

// chooseFromBoard is chooseFromMask computed from each env's hand bits: the
// same rule in a few operations, for the long runs (under -race scanning 90
// mask bytes per env dominates). The chosen action's mask bit is checked.
func chooseFromBoard(tb testing.TB, v *vecEnv, actions []int32, rng *env.RNG) {
	for i := range actions {
		b := v.State(i).Board()
		seat := (int(b.Leader) + int(b.TrickLen)) % int(b.Players)
		hand := &b.Hands[seat]
		allowed := uint8(1<<card.NumColours - 1)
		if b.TrickLen > 0 {
			if lead := int(b.Trick[0]) / card.MaxValue; hand[lead] != 0 {
				allowed = 1 << lead
			}
		}
		n := 0
		for c := range card.NumColours {
			if allowed&(1<<c) != 0 {
				n += bits.OnesCount32(hand[c])
			}
		}
		k := rng.IntN(n)
		for c := range card.NumColours {
			if allowed&(1<<c) == 0 {
				continue
			}
			m := hand[c]
			if cnt := bits.OnesCount32(m); k >= cnt {
				k -= cnt
				continue
			}
			for ; k > 0; k-- {
				m &= m - 1
			}
			actions[i] = int32(c*card.MaxValue + bits.TrailingZeros32(m))
			break
		}
		if v.Mask()[i*card.NumActions+int(actions[i])] != 1 {
			tb.Fatalf("env %d: legal card %d has mask bit 0", i, actions[i])
		}
	}
}

// vecBytes is every output buffer of v, in a fixed order, as bytes.
func vecBytes(v *vecEnv) []byte {
	out := slices.Clone(v.Obs())
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

// checkVecStates checks every env's buffers against its State.
func checkVecStates(tb testing.TB, v *vecEnv) {
	tb.Helper()
	d := v.Layout().Size
	p := v.Game().NumPlayers()
	for i := range v.NumEnvs() {
		s := v.State(i)
		player := int(v.Player()[i])
		if s.IsTerminal() || s.CurrentPlayer() != player {
			tb.Fatalf("env %d: Player() = %d, state's CurrentPlayer() = %d", i, player, s.CurrentPlayer())
		}
		if !slices.Equal(v.Obs()[i*d:(i+1)*d], s.ObservationTensor(player)) {
			tb.Fatalf("env %d: Obs() row differs from ObservationTensor(%d)", i, player)
		}
		for a, m := range s.LegalActionsMask() {
			if (v.Mask()[i*card.NumActions+a] == 1) != m {
				tb.Fatalf("env %d: Mask()[%d] = %d, want %v", i, a, v.Mask()[i*card.NumActions+a], m)
			}
		}
		if v.Done()[i] == 0 {
			for seat := range p {
				if v.Scores()[i*p+seat] != 0 {
					tb.Fatalf("env %d: Scores() = %v while Done() is 0, want zeros", i, v.Scores()[i*p:(i+1)*p])
				}
			}
		}
	}
}

func TestVecDeterminism(t *testing.T) {
	configs := []struct {
		name  string
		cfg   vecConfig
		steps int
	}{
		{"self-play with 4 players", vecConfig{Params: card.Params{Players: 4, Deals: 1}, NumEnvs: 512, Seed: 11}, 130},
		{"self-play with 6 players and an odd batch", vecConfig{Params: card.Params{Players: 6, Deals: 1, FirstDealer: 3}, NumEnvs: 601, Seed: 12}, 100},
		{"one learner against heuristic opponents, zero-sum", vecConfig{Params: card.Params{Players: 4, Deals: 2}, NumEnvs: 512, Seed: 13,
			LearnerSeats: []int{0}, Opponent: "heuristic", Reward: env.RewardZeroSum}, 70},
		{"two learners against random opponents", vecConfig{Params: card.Params{Players: 5, Deals: 1}, NumEnvs: 512, Seed: 14,
			LearnerSeats: []int{3, 1}, Opponent: "random"}, 70},
	}
	for _, tc := range configs {
		t.Run(tc.name+": 1 and 4 workers give identical bytes, and Reset reproduces", func(t *testing.T) {
			t.Parallel()
			c1, c4 := tc.cfg, tc.cfg
			c1.Workers, c4.Workers = 1, 4
			v1, v4 := newVec(t, c1), newVec(t, c4)
			start := vecBytes(v1)
			if !bytes.Equal(start, vecBytes(v4)) {
				t.Fatalf("after NewVecEnv the buffers differ between 1 and 4 workers")
			}
			rng := env.NewRNG(tc.cfg.Seed, 1)
			actions := make([]int32, tc.cfg.NumEnvs)
			var played [][]int32
			var trace [][sha256.Size]byte
			resets := 0
			for step := range tc.steps {
				chooseFromBoard(t, v1, actions, &rng)
				played = append(played, slices.Clone(actions))
				if err := v1.Step(actions); err != nil {
					t.Fatalf("Step(%d) error = %v", step, err)
				}
				if err := v4.Step(actions); err != nil {
					t.Fatalf("Step(%d) error = %v", step, err)
				}
				b1 := vecBytes(v1)
				if !bytes.Equal(b1, vecBytes(v4)) {
					t.Fatalf("Step(%d): buffers differ between 1 and 4 workers", step)
				}
				trace = append(trace, sha256.Sum256(b1))
				for _, d := range v1.Done() {
					resets += int(d)
				}
			}
			if resets < tc.cfg.NumEnvs {
				t.Errorf("only %d auto-resets in %d steps, want at least one per env", resets, tc.steps)
			}
			checkVecStates(t, v4)
			v1.Reset(tc.cfg.Seed)
			if !bytes.Equal(vecBytes(v1), start) {
				t.Fatalf("Reset(seed) does not reproduce the first observation")
			}
			for step, a := range played {
				if err := v1.Step(a); err != nil {
					t.Fatalf("after Reset: Step(%d) error = %v", step, err)
				}
				if sha256.Sum256(vecBytes(v1)) != trace[step] {
					t.Fatalf("after Reset: Step(%d) differs from the first run", step)
				}
			}
			v4.Reset(tc.cfg.Seed + 1)
			if bytes.Equal(vecBytes(v4), start) {
				t.Errorf("Reset with another seed gives the same observation")
			}
		})
	}
}

func TestVecIllegalActionRefusesBatch(t *testing.T) {
	cfg := vecConfig{Params: card.Params{Players: 4, Deals: 1}, NumEnvs: 8, Seed: 3, LearnerSeats: []int{0, 2}, Opponent: "random"}
	v := newVec(t, cfg)
	rng := env.NewRNG(3, 3)
	actions := make([]int32, cfg.NumEnvs)
	for range 9 {
		chooseFromMask(v.Mask(), actions, &rng)
		if err := v.Step(actions); err != nil {
			t.Fatal(err)
		}
	}
	snapshot := func() (string, []byte) {
		s := ""
		for k := range cfg.NumEnvs {
			f, c, err := v.Record(k)
			if err != nil {
				t.Fatal(err)
			}
			s += fmt.Sprintf("%v %v %s", f, c, v.State(k).Serialize())
		}
		return s, vecBytes(v)
	}
	recs, bufs := snapshot()
	for _, k := range []int{0, 3, 7} {
		const illegalCard = math.MinInt32
		for _, bad := range []int32{-2, card.NumActions, 1 << 20, illegalCard} {
			if bad == illegalCard { // a card id that is not legal in env k
				for a := range card.NumActions {
					if v.Mask()[k*card.NumActions+a] == 0 {
						bad = int32(a)
						break
					}
				}
			}
			t.Run(fmt.Sprintf("action %d in env %d refuses the whole batch", bad, k), func(t *testing.T) {
				chooseFromMask(v.Mask(), actions, &rng)
				actions[k] = bad
				if k < 7 {
					actions[7] = -5 // a later illegal action: the error names the first
				}
				err := v.Step(actions)
				var ie *card.IllegalActionError
				if !errors.Is(err, card.ErrIllegalAction) || !errors.As(err, &ie) {
					t.Fatalf("Step error = %v, want an *IllegalActionError", err)
				}
				if ie.Env != k || ie.Action != int(bad) || ie.Player != int(v.Player()[k]) {
					t.Errorf("error = %+v, want env %d action %d player %d", ie, k, bad, v.Player()[k])
				}
				if want := v.State(k).LegalActions(); !slices.Equal(ie.Legal, want) {
					t.Errorf("error's Legal = %v, want %v", ie.Legal, want)
				}
				if r, b := snapshot(); r != recs || !bytes.Equal(b, bufs) {
					t.Errorf("a refused Step changed an env")
				}
			})
		}
	}
	t.Run("a wrong number of actions is refused without change", func(t *testing.T) {
		if err := v.Step(actions[:cfg.NumEnvs-1]); err == nil {
			t.Errorf("Step with %d actions for %d envs: error = nil", cfg.NumEnvs-1, cfg.NumEnvs)
		}
		if r, b := snapshot(); r != recs || !bytes.Equal(b, bufs) {
			t.Errorf("a refused Step changed an env")
		}
	})
	t.Run("a closed env refuses to step", func(t *testing.T) {
		v.Close()
		chooseFromMask(v.Mask(), actions, &rng)
		if err := v.Step(actions); err == nil {
			t.Errorf("Step after Close: error = nil")
		}
		v.Close() // twice is fine
	})
}

// TestVecSkipLeavesEnvAsItIs: env.Skip as an env's action plays nothing in
// it (same state, obs, mask and player; rewards and done 0, scores cleared)
// while the other envs step; packed outputs too.
func TestVecSkipLeavesEnvAsItIs(t *testing.T) {
	for _, packed := range []bool{false, true} {
		t.Run(fmt.Sprintf("packed=%v", packed), func(t *testing.T) {
			cfg := vecConfig{Params: card.Params{Players: 3, Deals: 1}, NumEnvs: 6, Seed: 5, LearnerSeats: []int{0}, Opponent: "random", Packed: packed}
			v := newVec(t, cfg)
			rng := env.NewRNG(5, 5)
			actions := make([]int32, cfg.NumEnvs)
			row := func(k int) string {
				var o []byte
				if packed {
					pk := v.Packing()
					o = append(slices.Clone(v.ObsBits()[k*pk.Bytes:(k+1)*pk.Bytes]), v.ObsExtra()[k*pk.ExtraBytes:(k+1)*pk.ExtraBytes]...)
				} else {
					d := v.Layout().Size
					o = slices.Clone(v.Obs()[k*d : (k+1)*d])
				}
				return fmt.Sprintf("%v %v %d %s", o, v.Mask()[k*card.NumActions:(k+1)*card.NumActions], v.Player()[k], v.State(k).Serialize())
			}
			skipped := 0
			for step := 0; skipped < 3 && step < 100; step++ {
				ended := slices.Index(v.Done(), 1)
				chooseFromMask(v.Mask(), actions, &rng)
				if ended < 0 {
					if err := v.Step(actions); err != nil {
						t.Fatal(err)
					}
					continue
				}
				// Env `ended` finished its game last step: skip it once, as a
				// NEXT_STEP client does, and also skip env 0 mid-game.
				k := []int{ended, 0}
				before := []string{row(ended), row(0)}
				episode := v.Episode()[ended]
				for _, i := range k {
					actions[i] = env.Skip
				}
				others := map[int]string{}
				for i := range cfg.NumEnvs {
					if i != ended && i != 0 {
						others[i] = v.State(i).Serialize()
					}
				}
				if err := v.Step(actions); err != nil {
					t.Fatalf("Step with Skip: %v", err)
				}
				for j, i := range k {
					if got := row(i); got != before[j] {
						t.Errorf("env %d skipped: obs/mask/player/state changed", i)
					}
					if v.Done()[i] != 0 || slices.ContainsFunc(v.Rewards()[i*3:(i+1)*3], func(r float32) bool { return r != 0 }) ||
						slices.ContainsFunc(v.Scores()[i*3:(i+1)*3], func(s int32) bool { return s != 0 }) {
						t.Errorf("env %d skipped: done %d rewards %v scores %v, want all 0", i, v.Done()[i], v.Rewards()[i*3:(i+1)*3], v.Scores()[i*3:(i+1)*3])
					}
				}
				if v.Episode()[ended] != episode {
					t.Errorf("env %d skipped: episode %d -> %d", ended, episode, v.Episode()[ended])
				}
				for i, s := range others {
					if v.State(i).Serialize() == s {
						t.Errorf("env %d was not skipped but did not move", i)
					}
				}
				skipped++
			}
			if skipped < 3 {
				t.Fatalf("only %d games ended in 100 steps", skipped)
			}
		})
	}
}

func TestVecAutoResetAndRecords(t *testing.T) {
	for _, mode := range []env.RewardMode{env.RewardPoints, env.RewardZeroSum} {
		for _, learners := range [][]int{nil, {1}, {0, 2}} {
			cfg := vecConfig{Params: card.Params{Players: 3, Deals: 2, FirstDealer: 1}, NumEnvs: 6, Seed: 21,
				LearnerSeats: learners, Opponent: "heuristic", Reward: mode}
			t.Run(fmt.Sprintf("reward %v learners %v: episodes end in the same step with the right scores, rewards and records", mode, learners), func(t *testing.T) {
				v := newVec(t, cfg)
				g := v.Game()
				p := g.NumPlayers()
				isLearner := func(s int) bool { return len(learners) == 0 || slices.Contains(learners, s) }
				rng := env.NewRNG(21, 1)
				actions := make([]int32, cfg.NumEnvs)
				sums := make([]float64, cfg.NumEnvs*p)
				var prevRec []*card.Record
				for k := range cfg.NumEnvs {
					_, c, _ := v.Record(k)
					prevRec = append(prevRec, c)
				}
				finished := 0
				for step := 0; finished < 3*cfg.NumEnvs; step++ {
					if step > 2000 {
						t.Fatalf("only %d games finished in %d steps", finished, step)
					}
					prevEpisode := slices.Clone(v.Episode())
					prevPlayer := slices.Clone(v.Player())
					chooseFromMask(v.Mask(), actions, &rng)
					if err := v.Step(actions); err != nil {
						t.Fatalf("Step(%d) error = %v", step, err)
					}
					checkVecStates(t, v)
					for k := range cfg.NumEnvs {
						if pl := int(v.Player()[k]); !isLearner(pl) {
							t.Fatalf("Step(%d) env %d: Player() = %d, not a learner seat %v", step, k, pl, learners)
						}
						rew := v.Rewards()[k*p : (k+1)*p]
						total := 0.0
						for seat, r := range rew {
							sums[k*p+seat] += float64(r)
							total += float64(r)
						}
						if mode == env.RewardZeroSum && math.Abs(total) > 1e-3 {
							t.Fatalf("Step(%d) env %d: zero-sum rewards %v sum to %v, want 0", step, k, rew, total)
						}
						done := v.Done()[k] == 1
						if got, want := v.Episode()[k], prevEpisode[k]+int64(v.Done()[k]); got != want {
							t.Fatalf("Step(%d) env %d: Episode() = %d, want %d", step, k, got, want)
						}
						fin, cur, err := v.Record(k)
						if err != nil {
							t.Fatal(err)
						}
						if !done {
							// The record shows what happened: our card, by the seat that was to act,
							// and the dealt hands are the hands now plus the cards played since.
							d := cur.Deals[len(cur.Deals)-1]
							if len(learners) == 0 {
								prev := d // a deal just ended: our card closed the one before
								if d.NumPlays == 0 {
									prev = cur.Deals[len(cur.Deals)-2]
								}
								last := prev.Plays[prev.NumPlays-1]
								if int(last.Seat) != int(prevPlayer[k]) || int32(last.Card) != actions[k] {
									t.Fatalf("Step(%d) env %d: record's last play = %+v, want seat %d card %d", step, k, last, prevPlayer[k], actions[k])
								}
							}
							for seat := range p {
								held := setOf(v.State(k).Hand(seat))
								for _, pl := range d.Plays[:d.NumPlays] {
									if int(pl.Seat) == seat {
										held.add(pl.Card)
									}
								}
								if held != setOf(d.Hands[seat][:]) {
									t.Fatalf("Step(%d) env %d: record hand of seat %d = %v, want hand plus plays %v", step, k, seat, names(d.Hands[seat][:]), held)
								}
							}
							continue
						}
						finished++
						// The ended game: its record replays to the reported scores.
						scores := v.Scores()[k*p : (k+1)*p]
						checkRecordReplays(t, g, fin, scores)
						if !slices.Equal(fin.Deals[0].Hands[:], prevRec[k].Deals[0].Hands[:]) {
							t.Fatalf("Step(%d) env %d: finished record's first deal is not the one the game started with", step, k)
						}
						// Rewards over the game add up to its totals (points) or
						// to points less the others' mean (zero_sum).
						for seat := range p {
							want := float64(scores[seat])
							if mode == env.RewardZeroSum {
								others := 0.0
								for o := range p {
									if o != seat {
										others += float64(scores[o])
									}
								}
								want -= others / float64(p-1)
							}
							if got := sums[k*p+seat]; math.Abs(got-want) > 1e-2 {
								t.Fatalf("Step(%d) env %d seat %d: rewards over the game sum to %v, want %v", step, k, seat, got, want)
							}
							sums[k*p+seat] = 0
						}
						// The buffers already show the next game's start.
						s := v.State(k)
						if s.DealIndex() != 0 || s.Dealer() != cfg.Params.FirstDealer || slices.ContainsFunc(s.Totals(), func(x int) bool { return x != 0 }) {
							t.Fatalf("Step(%d) env %d: after done the state is not a new game:\n%s", step, k, s)
						}
						if cur.Deals[0].NumPlays > p {
							t.Fatalf("Step(%d) env %d: the new game's record has %d plays already", step, k, cur.Deals[0].NumPlays)
						}
						prevRec[k] = cur
					}
				}
			})
		}
	}
}

// checkRecordReplays replays a finished game record through a fresh State
// built from its hands and checks seats, dealers and scores.
func checkRecordReplays(tb testing.TB, g *card.Game, rec *card.Record, totals []int32) {
	tb.Helper()
	p := g.NumPlayers()
	if rec == nil || len(rec.Deals) != g.Params().Deals || rec.Params != g.Params() {
		tb.Fatalf("finished record = %+v, want %d deals of %+v", rec, g.Params().Deals, g.Params())
	}
	var deals []card.Hands
	for _, d := range rec.Deals {
		h := make(card.Hands, p)
		for seat := range p {
			h[seat] = slices.Clone(d.Hands[seat][:])
			if !slices.IsSorted(h[seat]) {
				tb.Fatalf("record hand %v is not sorted", h[seat])
			}
		}
		deals = append(deals, h)
	}
	s, err := g.NewStateFromDeals(0, deals...)
	if err != nil {
		tb.Fatalf("NewStateFromDeals(record hands) error = %v", err)
	}
	for k, d := range rec.Deals {
		if !d.Done || d.NumPlays != p*card.HandSize || d.Dealer != (g.Params().FirstDealer+k)%p {
			tb.Fatalf("record deal %d: done %v plays %d dealer %d", k, d.Done, d.NumPlays, d.Dealer)
		}
		for i, pl := range d.Plays[:d.NumPlays] {
			if int(pl.Seat) != s.CurrentPlayer() {
				tb.Fatalf("record deal %d play %d: seat %d, want %d", k, i, pl.Seat, s.CurrentPlayer())
			}
			mustApply(tb, s, pl.Card)
		}
		rewards := s.Rewards()
		for seat := range p {
			if int(rewards[seat]) != d.Scores[seat] {
				tb.Fatalf("record deal %d: replayed score of seat %d = %v, recorded %d", k, seat, rewards[seat], d.Scores[seat])
			}
		}
	}
	if !s.IsTerminal() {
		tb.Fatalf("replaying the record does not end the game")
	}
	for seat, x := range s.Totals() {
		if int32(x) != totals[seat] || rec.Totals()[seat] != x {
			tb.Fatalf("replayed total of seat %d = %d, record %d, Scores() %d", seat, x, rec.Totals()[seat], totals[seat])
		}
	}
}

func TestVecConfigErrors(t *testing.T) {
	ok := vecConfig{Params: card.Params{Players: 4}, NumEnvs: 2}
	tests := []struct {
		name string
		edit func(*vecConfig)
	}{
		{"zero envs", func(c *vecConfig) { c.NumEnvs = 0 }},
		{"too many envs", func(c *vecConfig) { c.NumEnvs = env.MaxNumEnvs + 1 }},
		{"bad game parameters", func(c *vecConfig) { c.Params.Players = 7 }},
		{"a learner seat out of range", func(c *vecConfig) { c.LearnerSeats = []int{4}; c.Opponent = "random" }},
		{"a negative learner seat", func(c *vecConfig) { c.LearnerSeats = []int{-1}; c.Opponent = "random" }},
		{"a learner seat twice", func(c *vecConfig) { c.LearnerSeats = []int{1, 1}; c.Opponent = "random" }},
		{"learner seats without an opponent", func(c *vecConfig) { c.LearnerSeats = []int{0} }},
		{"an unknown opponent", func(c *vecConfig) { c.LearnerSeats = []int{0}; c.Opponent = "grandmaster" }},
		{"an unknown reward mode", func(c *vecConfig) { c.Reward = 7 }},
	}
	for _, tc := range tests {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			c := ok
			tc.edit(&c)
			if v, err := newVecEnv(c); err == nil {
				v.Close()
				t.Errorf("NewVecEnv(%+v) error = nil, want one", c)
			}
		})
	}
	t.Run("all seats as learners need no opponent", func(t *testing.T) {
		c := ok
		c.LearnerSeats = []int{3, 0, 1, 2}
		v := newVec(t, c)
		if got := v.LearnerSeats(); !slices.Equal(got, []int{0, 1, 2, 3}) {
			t.Errorf("LearnerSeats() = %v, want [0 1 2 3]", got)
		}
	})
	if _, err := env.ParseRewardMode("zero_sum"); err != nil {
		t.Errorf("ParseRewardMode(zero_sum) error = %v", err)
	}
	if _, err := env.ParseRewardMode("points"); err != nil {
		t.Errorf("ParseRewardMode(points) error = %v", err)
	}
	if _, err := env.ParseRewardMode("winner_takes_all"); err == nil {
		t.Errorf("ParseRewardMode(winner_takes_all) error = nil, want one")
	}
	v := newVec(t, ok)
	if _, _, err := v.Record(2); err == nil {
		t.Errorf("Record(2) of 2 envs: error = nil, want one")
	}
	if _, _, err := v.Record(-1); err == nil {
		t.Errorf("Record(-1): error = nil, want one")
	}
}

func TestVecStepAllocatesNothing(t *testing.T) {
	configs := []struct {
		name string
		cfg  vecConfig
	}{
		{"self-play", vecConfig{Params: card.Params{Players: 4, Deals: 1}, NumEnvs: 128, Workers: 2}},
		{"a learner against heuristic opponents", vecConfig{Params: card.Params{Players: 4, Deals: 1}, NumEnvs: 128, Workers: 2,
			LearnerSeats: []int{0}, Opponent: "heuristic"}},
		{"learners against random opponents, zero-sum", vecConfig{Params: card.Params{Players: 6, Deals: 1}, NumEnvs: 128, Workers: 2,
			LearnerSeats: []int{1, 4}, Opponent: "random", Reward: env.RewardZeroSum}},
		{"self-play, packed outputs", vecConfig{Params: card.Params{Players: 5, Deals: 1}, NumEnvs: 128, Workers: 2, Packed: true}},
		{"a learner against a table of different bots", vecConfig{Params: card.Params{Players: 5, Deals: 1}, NumEnvs: 128, Workers: 2,
			Opponents: []string{"heuristic", "", "random", "heuristic", "random"}}},
	}
	for _, tc := range configs {
		t.Run(tc.name+" steps with zero heap allocations", func(t *testing.T) {
			v := newVec(t, tc.cfg)
			rng := env.NewRNG(1, 1)
			actions := make([]int32, tc.cfg.NumEnvs)
			step := func() {
				chooseFromMask(v.Mask(), actions, &rng)
				if err := v.Step(actions); err != nil {
					t.Fatal(err)
				}
			}
			for range 100 { // warm up, past a game's end and auto-reset
				step()
			}
			if allocs := testing.AllocsPerRun(100, step); allocs != 0 {
				t.Errorf("Step allocates %v times per call, want 0", allocs)
			}
		})
	}
}

// TestVecPackedOutputs steps a packed and a plain batch side by side: the
// packed outputs (encoded straight from the games' bit sets) unpack to
// exactly the plain ones, every step, through game ends and resets.
func TestVecPackedOutputs(t *testing.T) {
	for p := 3; p <= 6; p++ {
		cfg := vecConfig{Params: card.Params{Players: p, Deals: 1}, NumEnvs: 70, Seed: uint64(p), Workers: 2}
		if p%2 == 0 {
			cfg.LearnerSeats, cfg.Opponent = []int{1}, "heuristic"
		}
		plain := newVec(t, cfg)
		cfg.Packed = true
		packed := newVec(t, cfg)
		require.Nil(t, plain.ObsBits(), "an unpacked batch has no packed outputs")
		pk := packed.Packing()
		d := packed.Layout().Size
		rng := env.NewRNG(9, uint64(p))
		actions := make([]int32, cfg.NumEnvs)
		obsRow, maskRow := make([]uint8, d), make([]uint8, card.NumActions)
		require.Nil(t, packed.Obs(), "a packed batch writes no byte observations")
		check := func(step int) {
			require.Equal(t, plain.Mask(), packed.Mask(), "P=%d step %d", p, step)
			require.Equal(t, plain.Player(), packed.Player())
			require.Equal(t, plain.Rewards(), packed.Rewards())
			require.Equal(t, plain.Done(), packed.Done())
			require.Equal(t, plain.Scores(), packed.Scores())
			require.Equal(t, plain.Episode(), packed.Episode())
			for i := range cfg.NumEnvs {
				pk.Unpack(obsRow, packed.ObsBits()[i*pk.Bytes:(i+1)*pk.Bytes], packed.ObsExtra()[i*pk.ExtraBytes:(i+1)*pk.ExtraBytes])
				require.Equal(t, plain.Obs()[i*d:(i+1)*d], obsRow, "P=%d step %d env %d: obs", p, step, i)
				bits := packed.MaskBits()[i*card.MaskBytes : (i+1)*card.MaskBytes]
				for a := range card.NumActions {
					maskRow[a] = bits[a/8] >> (a % 8) & 1
				}
				require.Equal(t, packed.Mask()[i*card.NumActions:(i+1)*card.NumActions], maskRow, "P=%d step %d env %d: mask", p, step, i)
			}
		}
		check(0)
		for step := 1; step <= 40*p; step++ {
			chooseFromMask(plain.Mask(), actions, &rng)
			require.NoError(t, plain.Step(actions))
			require.NoError(t, packed.Step(actions))
			check(step)
		}
		plain.Reset(77)
		packed.Reset(77)
		check(-1)
	}
}

func TestVecResetContinue(t *testing.T) {
	cfg := vecConfig{Params: card.Params{Players: 3, Deals: 1}, NumEnvs: 130, Seed: 5, LearnerSeats: []int{2}, Opponent: "heuristic"}
	c1, c2 := cfg, cfg
	c1.Workers, c2.Workers = 1, 2
	v1, v2 := newVec(t, c1), newVec(t, c2)
	start := vecBytes(v1)
	rng := env.NewRNG(5, 5)
	actions := make([]int32, cfg.NumEnvs)
	for range 20 { // past every env's first game (15 learner steps)
		chooseFromMask(v1.Mask(), actions, &rng)
		if err := v1.Step(actions); err != nil {
			t.Fatal(err)
		}
		if err := v2.Step(actions); err != nil {
			t.Fatal(err)
		}
	}
	v1.ResetContinue()
	v2.ResetContinue()
	t.Run("ResetContinue starts new games, clears counters and differs from the first games", func(t *testing.T) {
		if bytes.Equal(vecBytes(v1), start) {
			t.Errorf("ResetContinue gave the same games as the first Reset")
		}
		for k := range cfg.NumEnvs {
			if v1.Episode()[k] != 0 || v1.Done()[k] != 0 {
				t.Fatalf("env %d: Episode() = %d, Done() = %d after ResetContinue, want 0, 0", k, v1.Episode()[k], v1.Done()[k])
			}
			if s := v1.State(k); s.TricksDone() != 0 || s.DealIndex() != 0 {
				t.Fatalf("env %d: not at the start of a game after ResetContinue", k)
			}
		}
		checkVecStates(t, v1)
	})
	t.Run("ResetContinue does not depend on the worker count", func(t *testing.T) {
		if !bytes.Equal(vecBytes(v1), vecBytes(v2)) {
			t.Errorf("buffers differ between 1 and 2 workers after ResetContinue")
		}
	})
	t.Run("the getters describe the configuration", func(t *testing.T) {
		if v1.NumEnvs() != cfg.NumEnvs || v1.Game().NumPlayers() != 3 || v1.Layout().Size != v1.Game().ObservationLayout().Size ||
			!slices.Equal(v1.LearnerSeats(), []int{2}) || v1.Config().Params.Deals != 1 || v1.Config().Opponent != "heuristic" {
			t.Errorf("NumEnvs %d, players %d, layout %d, learners %v, config %+v", v1.NumEnvs(), v1.Game().NumPlayers(), v1.Layout().Size, v1.LearnerSeats(), v1.Config())
		}
		if len(v1.Obs()) != cfg.NumEnvs*v1.Layout().Size || len(v1.Mask()) != cfg.NumEnvs*card.NumActions || len(v1.Rewards()) != cfg.NumEnvs*3 ||
			len(v1.Scores()) != cfg.NumEnvs*3 || len(v1.Player()) != cfg.NumEnvs || len(v1.Done()) != cfg.NumEnvs || len(v1.Episode()) != cfg.NumEnvs {
			t.Errorf("buffer lengths do not match N=%d, P=3, D=%d", cfg.NumEnvs, v1.Layout().Size)
		}
	})
}
