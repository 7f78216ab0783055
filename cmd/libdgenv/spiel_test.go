package main

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
)

// playRandom plays a whole game from st with rng, calling check at every node.
func playRandom(t *testing.T, st *spielState, rng *env.RNG, check func(*spielState)) {
	t.Helper()
	for !st.terminal() {
		check(st)
		legal := st.legal(nil)
		if len(legal) == 0 {
			t.Fatalf("no legal action at a non-terminal node:\n%s", st)
		}
		if err := st.apply(int(legal[rng.IntN(len(legal))])); err != nil {
			t.Fatalf("apply: %v", err)
		}
	}
	check(st)
}

func tensors(st *spielState, player int) ([]float32, []float32) {
	o := make([]float32, tensorSize(st.g, kindObservation))
	i := make([]float32, tensorSize(st.g, kindInfoState))
	st.tensor(player, kindObservation, o)
	st.tensor(player, kindInfoState, i)
	return o, i
}

func TestSpielGamesFollowOpenSpielsConventions(t *testing.T) {
	for p := card.MinPlayers; p <= card.MaxPlayers; p++ {
		t.Run(fmt.Sprintf("%d players", p), func(t *testing.T) {
			for game := range 3 {
				st, err := newSpielState(card.Params{Players: p, Deals: 2, FirstDealer: game % p})
				if err != nil {
					t.Fatal(err)
				}
				rng := env.NewRNG(uint64(game), uint64(p))
				chance, decisions := 0, 0
				sum := make([]float64, p)
				playRandom(t, st, &rng, func(st *spielState) {
					cur := st.currentPlayer()
					if cur >= 0 || st.terminal() { // rewards since the last decision, as OpenSpiel sums them
						for i := range p {
							sum[i] += st.rewards[i]
						}
					}
					switch {
					case cur == chancePlayer:
						chance++
					case cur >= 0:
						decisions++
					}
					if st.terminal() {
						return
					}
					if !slices.IsSorted(st.legal(nil)) {
						t.Fatalf("legal actions not sorted: %v", st.legal(nil))
					}
					c := st.clone()
					if c.serialize() != st.serialize() || c.String() != st.String() {
						t.Fatal("clone differs from its original")
					}
					d, err := deserializeSpiel(st.prm, st.serialize())
					if err != nil {
						t.Fatalf("deserialize: %v", err)
					}
					if d.String() != st.String() || d.currentPlayer() != cur {
						t.Fatal("deserialized state differs")
					}
				})
				if want := 2 * 15 * p; chance != want || decisions != want {
					t.Errorf("%d chance nodes and %d decisions, want %d of each", chance, decisions, want)
				}
				ret := make([]float64, p)
				st.returns(ret)
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
	for p := card.MinPlayers; p <= card.MaxPlayers; p++ {
		t.Run(fmt.Sprintf("%d players", p), func(t *testing.T) {
			st, _ := newSpielState(card.Params{Players: p, Deals: 2})
			rng := env.NewRNG(7, uint64(p))
			changed, nodes := 0, 0
			playRandom(t, st, &rng, func(st *spielState) {
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
					if st.observationString(player) != r.observationString(player) || st.infoStateString(player) != r.infoStateString(player) {
						t.Fatalf("player %d's strings differ:\n%s\n---\n%s", player, st.infoStateString(player), r.infoStateString(player))
					}
					if r.currentPlayer() != st.currentPlayer() || len(r.hist) != len(st.hist) {
						t.Fatal("resampled state is at another node")
					}
					if d, err := deserializeSpiel(r.prm, r.serialize()); err != nil || d.String() != r.String() {
						t.Fatalf("resampled state does not replay: %v", err)
					}
					if r.String() != st.String() {
						changed++
					}
					c := r.clone()
					rr := env.NewRNG(1, 2)
					playRandom(t, c, &rr, func(*spielState) {})
				}
			})
			if changed == 0 {
				t.Error("resampling never changed a hidden card")
			}
		})
	}
}

func TestSpielRefusesIllegalActionsAndBadText(t *testing.T) {
	st, _ := newSpielState(card.Params{Players: 3})
	if err := st.apply(89); !errors.Is(err, card.ErrIllegalAction) { // purple 18 is not in the 3-player deck
		t.Errorf("apply(89) at the deal = %v, want an illegal action", err)
	}
	for _, text := range []string{"", "david-goliath-spiel v1\nparams 4 4 0\nactions", "david-goliath-spiel v1\nparams 3 3 0\nactions 0 0",
		"david-goliath-spiel v1\nparams 3 3 0\nactions x"} {
		if _, err := deserializeSpiel(card.Params{Players: 3, Deals: 3}, text); !errors.Is(err, card.ErrBadSerialization) {
			t.Errorf("deserialize(%q) = %v, want ErrBadSerialization", text, err)
		}
	}
}

func TestVecEnvRefusesBadConfigsAndCopiesItsBuffers(t *testing.T) {
	for _, cfg := range []string{`{"game":{"players":7}}`, `{"num_envs":0}`, `{"packing":"zip"}`, `{"reward":"x"}`,
		`{"learner_seats":[0]}`, `{"learner_seats":[0],"opponent":"nobody"}`, `{"game":{"deals":0}}`, `not json`,
		`{"obs_dtype":"<f8"}`, `{"packing":"bits","obs_dtype":"<f4"}`} {
		if _, err := newVecEnv([]byte(cfg)); err == nil || err.Code != "bad_request" {
			t.Errorf("newVecEnv(%s) = %v, want a bad_request", cfg, err)
		}
	}
	for _, cfg := range []string{`{"opponents":[null,"random","random"]}`, `{"opponents":[null,"random","nobody","random"]}`,
		`{"opponent":"random","opponents":[null,"random","random","random"]}`, `{"learner_seats":[1],"opponents":[null,"random","random","random"]}`} {
		if _, err := newVecEnv([]byte(cfg)); err == nil || err.Code != "bad_request" || err.Details["field"] != "opponents" {
			t.Errorf("newVecEnv(%s) = %v, want a bad_request of field opponents", cfg, err)
		}
	}
	table, err := newVecEnv([]byte(`{"num_envs":4,"seed":3,"opponents":[null,"heuristic",null,"random"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := table.spec.LearnerSeats; !slices.Equal(got, []int{0, 2}) {
		t.Errorf("a table of bots: learner seats %v, want [0 2]", got)
	}
	table.close()
	e, err := newVecEnv([]byte(`{"num_envs":8,"seed":3,"game":{"players":5}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	arena := make([]byte, e.bytes)
	e.reset(3, true, arena)
	for _, pc := range e.pieces {
		if !slices.Equal(arena[pc.Offset:pc.Offset+len(pc.src())], pc.src()) {
			t.Errorf("%s: arena differs from the VecEnv's buffer", pc.Name)
		}
	}
	acts := make([]int32, 8)
	if err := e.step(acts, arena); err == nil || err.Code != "illegal_action" {
		t.Errorf("step(all zeros) = %v, want illegal_action", err)
	}
	f, err := newVecEnv([]byte(`{"num_envs":8,"seed":3,"game":{"players":5},"obs_dtype":"<f4"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	farena := make([]byte, f.bytes)
	f.reset(3, true, farena)
	obs := e.v.Obs()
	got := unsafe.Slice((*float32)(unsafe.Pointer(&farena[f.pieces[0].Offset])), len(obs))
	for i, v := range obs {
		if got[i] != float32(v) {
			t.Fatalf("float32 obs[%d] = %v, want %d", i, got[i], v)
		}
	}
}

// TestOneHandleFromManyGoroutines steps one batch from several goroutines
// at once: calls are serialised, so each sees a consistent batch (run with -race).
func TestOneHandleFromManyGoroutines(t *testing.T) {
	e, err := newVecEnv([]byte(`{"num_envs":4,"seed":1}`))
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			arena := make([]byte, e.bytes)
			for range 50 {
				e.mu.Lock()
				mask := slices.Clone(e.v.Mask())
				e.mu.Unlock()
				acts := make([]int32, 4)
				for i := range acts {
					acts[i] = int32(slices.Index(mask[i*card.NumActions:(i+1)*card.NumActions], 1))
				}
				_ = e.step(acts, arena) // another goroutine may have stepped first: illegal is fine
			}
			_ = g
		}()
	}
	wg.Wait()
}

func TestRolloutsEndGamesAndAverageTheirReturns(t *testing.T) {
	st, _ := newSpielState(card.Params{Players: 4, Deals: 2})
	sum := make([]float64, 4)
	st.rollout(3, 1, sum)
	total := 0.0
	for _, v := range sum {
		total += v
	}
	if total <= 0 {
		t.Fatalf("rollout returns %v: three whole games score points", sum)
	}
	if st.currentPlayer() != chancePlayer || len(st.hist) != 0 {
		t.Fatal("rollout changed the state it started from")
	}
}

// TestResampleWhileDealingRedealsTheUndealtCardsToo: during a deal, which
// cards are still undealt is as hidden from a player as the others' cards,
// so resampled worlds must differ in it as well.
func TestResampleWhileDealingRedealsTheUndealtCardsToo(t *testing.T) {
	st, _ := newSpielState(card.Params{Players: 4, Deals: 1})
	for range 20 { // 5 cards each
		legal := st.legal(nil)
		if err := st.apply(int(legal[0])); err != nil {
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
		seen[fmt.Sprint(r.legal(nil))] = true
	}
	if len(seen) < 2 {
		t.Error("the undealt cards were the same in 20 resampled worlds")
	}
}
