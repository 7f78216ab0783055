package card_test

// A long run of random plays through the vectorised env with cheap
// invariants checked on every env after every step. About a million plays
// always run; DG_LONG=1 runs tens of millions. A packed twin of each batch
// checks the bit encoder on every observation of every fifth step.

import (
	"fmt"
	"math/bits"
	"os"
	"slices"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
)

func TestMillionRandomPlays(t *testing.T) {
	steps := 250 // x 1024 envs x 4 player counts: about a million plays
	if os.Getenv("DG_LONG") == "1" {
		steps = 10000
	}
	for players := card.MinPlayers; players <= card.MaxPlayers; players++ {
		t.Run(fmt.Sprintf("%d players: cards conserved, deal scores and episode counts add up", players), func(t *testing.T) {
			t.Parallel()
			const n = 1024
			deals := 1 + players%2
			cfg := vecConfig{Params: card.Params{Players: players, Deals: deals, FirstDealer: players - 1}, NumEnvs: n, Seed: uint64(players)}
			v := newVec(t, cfg)
			// A packed twin, stepped with the same actions: its bits, encoded
			// straight from the game state, must unpack to v's observations.
			pcfg := cfg
			pcfg.Packed = true
			pv := newVec(t, pcfg)
			pk, d := pv.Packing(), v.Layout().Size
			row := make([]uint8, d)
			gameLen := deals * card.TricksPerDeal * players
			var deckBits [card.NumColours]uint32
			for c := range deckBits {
				deckBits[c] = 1<<card.DeckValues(players) - 1
			}
			// Largest possible deal total: every colour split as 1-2 cards at face value.
			valueSum := card.NumColours * card.DeckValues(players) * (card.DeckValues(players) + 1) / 2
			rng := env.NewRNG(uint64(players), 99)
			actions := make([]int32, n)
			gameRewards := make([]float64, n*players)
			plays := 0
			for step := 1; step <= steps; step++ {
				chooseFromBoard(t, v, actions, &rng)
				if err := v.Step(actions); err != nil {
					t.Fatalf("Step(%d) error = %v", step, err)
				}
				if err := pv.Step(actions); err != nil {
					t.Fatalf("packed Step(%d) error = %v", step, err)
				}
				plays += n
				rew, done, scores, episode := v.Rewards(), v.Done(), v.Scores(), v.Episode()
				for i := range n {
					if step%5 == 0 { // every fifth step: unpacking is slow under -race
						pk.Unpack(row, pv.ObsBits()[i*pk.Bytes:(i+1)*pk.Bytes], pv.ObsExtra()[i*pk.ExtraBytes:(i+1)*pk.ExtraBytes])
						if !slices.Equal(row, v.Obs()[i*d:(i+1)*d]) {
							t.Fatalf("Step(%d) env %d: the packed observation unpacks to something else", step, i)
						}
					}
					b := v.State(i).Board()
					// Cards: hands, prizes and the trick are disjoint and make the deck.
					var seen [card.NumColours]uint32
					count := 0
					add := func(c int, m uint32) {
						if seen[c]&m != 0 {
							t.Fatalf("Step(%d) env %d: a card of colour %d is in two places", step, i, c)
						}
						seen[c] |= m
						count += bits.OnesCount32(m)
					}
					for seat := range players {
						for c := range card.NumColours {
							add(c, b.Hands[seat][c])
							add(c, b.Prizes[seat][c])
						}
					}
					for _, c := range b.Trick[:b.TrickLen] {
						add(int(c)/card.MaxValue, 1<<(int(c)%card.MaxValue))
					}
					if seen != deckBits || count != 15*players {
						t.Fatalf("Step(%d) env %d: table holds %d cards %v, want the deck %v", step, i, count, seen, deckBits)
					}
					if int(v.Player()[i]) != (int(b.Leader)+int(b.TrickLen))%players {
						t.Fatalf("Step(%d) env %d: Player() = %d, want leader %d + %d", step, i, v.Player()[i], b.Leader, b.TrickLen)
					}
					// Rewards come once a deal, a deal's points are within bounds.
					dealEnd := step%(card.TricksPerDeal*players) == 0
					dealSum := 0.0
					for seat := range players {
						r := float64(rew[i*players+seat])
						if !dealEnd && r != 0 {
							t.Fatalf("Step(%d) env %d: reward %v in the middle of a deal", step, i, r)
						}
						dealSum += r
						gameRewards[i*players+seat] += r
					}
					if dealEnd && (dealSum < float64(15*players) || dealSum > float64(valueSum)) {
						t.Fatalf("Step(%d) env %d: deal points sum to %v, outside %d..%d", step, i, dealSum, 15*players, valueSum)
					}
					// Every game is exactly gameLen plays in self-play.
					if want := int64(step / gameLen); episode[i] != want {
						t.Fatalf("Step(%d) env %d: Episode() = %d, want %d", step, i, episode[i], want)
					}
					if wantDone := step%gameLen == 0; (done[i] == 1) != wantDone {
						t.Fatalf("Step(%d) env %d: Done() = %d, want %v", step, i, done[i], wantDone)
					}
					if done[i] == 1 {
						for seat := range players {
							if float64(scores[i*players+seat]) != gameRewards[i*players+seat] {
								t.Fatalf("Step(%d) env %d: Scores()[%d] = %d, want the game's rewards %v", step, i, seat, scores[i*players+seat], gameRewards[i*players+seat])
							}
							gameRewards[i*players+seat] = 0
						}
					}
				}
			}
			t.Logf("%d plays, %d games per env", plays, steps/gameLen)
		})
	}
}
