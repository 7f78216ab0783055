package policy_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/env/policy"
)

// The committed expert-iteration network (policies/expert.onnx, iteration 2
// of --preset expert-rollout, the policy iteration on the table's own values
// from iteration 27 of the --ret-mix 0.5 continuation, now
// policies/expert-27.onnx; docs/training.md "Session 28") plays the 4-player
// card game, and one seat of it against three heuristic bots scores clearly
// more than the committed imitation network in the same games
// (docs/training.md: +38.49 against +9.53 over 2,000 duplicate games; in
// these 96, +41.09 ± 6.40 against +9.63 ± 6.87).
// Bots and seeds are deterministic: the same games every run.
func TestCommittedExpertPolicy(t *testing.T) {
	beatsImitation(t, "expert", "imitate-search", 4, 96)
}

// The committed 4-player bare network (policies/expert-p4.onnx, iteration 0
// of --preset expert-rollout with search itself, at 8 worlds, in its seat in
// the rollouts, from policies/expert.onnx; docs/training.md "Session 35":
// 4.64 ± 2.30 points a game ahead of search at the mixed table over seeds 7
// to 11, 3.16 ± 1.62 over 4,000 games; expert.onnx stays the guided
// search's prior) plays the 4-player game, and one seat of it against three
// heuristic bots scores clearly more than the committed imitation network
// in the same games (in these 96: +37.35 ± 6.13 against +9.63 ± 6.87).
func TestCommittedExpertP4Policy(t *testing.T) {
	beatsImitation(t, "expert-p4", "imitate-search", 4, 96)
}

// The committed 4-player colour-averaged network (policies/expert-p4-c3.onnx:
// expert-p4 run on three colour renamings of the position, its logits
// averaged; python -m dgenv.export --colour-average 3, docs/training.md
// "Session 37") replays the first 16 games of seed 7 of the mixed
// table exactly as recorded (bin/dgeval -players 4 -agents
// policy:expert-p4-c3,search,heuristic,random -duplicate -seed 7), and one
// seat of it against three heuristic bots scores clearly more than the
// imitation network (in these 96: +44.89 ± 6.32 against +9.63 ± 6.87;
// expert-p4 +37.35 ± 6.13 in the same games).
func TestCommittedExpertP4C3Policy(t *testing.T) {
	replaysRecorded(t, "policy:expert-p4-c3,search,heuristic,random", 7, [][]int{
		{225, 204, 137, 122}, {183, 154, 120, 126}, {247, 197, 173, 111}, {119, 159, 182, 132},
		{222, 180, 123, 135}, {177, 157, 141, 137}, {176, 200, 148, 98}, {212, 121, 187, 123},
		{186, 158, 161, 128}, {126, 172, 130, 102}, {149, 193, 146, 126}, {209, 203, 147, 121},
		{210, 173, 142, 119}, {166, 202, 128, 202}, {170, 180, 157, 145}, {173, 190, 140, 149},
	})
	beatsImitation(t, "expert-p4-c3", "imitate-search", 4, 96)
}

// replaysRecorded plays the recorded games of a table (its agents
// comma-separated, duplicate, the seed; as many games as rows) and wants
// every agent's total in every game as recorded: a change in a policy's
// logits, a bot or the rules that changes a move shows here.
func replaysRecorded(t *testing.T, table string, seed uint64, want [][]int) {
	t.Helper()
	agents := strings.Split(table, ",")
	reg, g, _ := registeredCommitted(t, len(agents))
	res, err := env.PlayMatchOf(reg, g, env.MatchConfig{Agents: agents, Games: len(want), Seed: seed, Duplicate: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(res.Scores, want, slices.Equal[[]int]) {
		t.Errorf("%s, seed %d: totals per game\n%v\nrecorded\n%v", table, seed, res.Scores, want)
	}
}

// The committed 3-player network (policies/expert-p3.onnx, w34: three
// steps of --preset expert-rollout from session 54's r15 with the
// registered 32-world search in its seat in the rollouts (--rollout-worlds
// 0), the third with eight rollouts a card instead of four, each labelled
// in both seatings of the table (--teach-orders 2) and fitted warm on its
// labels and the two steps' before; r15 was the third such step at
// 8 worlds after r12, which was fitted warm from session 53's ca on ca's
// labels and its own; ca was session 51's network refitted with labels of
// the reversed seating too; session 51's was the sixth step of --preset
// expert-rollout from session 47's network: the table's own
// values, four rollouts a card from the true state with search itself, at
// 8 worlds, in its seat in the rollouts and the averaged network as prior;
// each step fitted warm from the one before on its own labels and all the
// earlier steps' in one window; session 47's network was iteration 81 of
// --preset expert at 3 players: session 29's iteration 19 continued warm
// with 32- to 256-world labels to 76, the deals' real outcomes mixed in at
// half weight to 80 and a model of the search values' bias carried to
// every card at 81; docs/training.md "Session 42" to "Session 47" and
// "Session 49" to "Session 57") plays the 3-player game, and one seat of
// it against two heuristic bots scores clearly more than imitate-search-p3
// in the same games (in these 192: +21.11 ± 3.08 against -0.26 ± 2.95;
// w33 +23.67 ± 2.86, r12 +22.62 ± 2.86, session 51's network +22.96 ±
// 2.90, session 50's +22.67 ± 2.65, session 49's +25.10 ± 3.11, session
// 47's +23.73 ± 3.12, session 46's +25.34 ± 2.90, session 43's +20.68 ±
// 2.93, session 29's +19.47 ± 2.88).
func TestCommittedExpertP3Policy(t *testing.T) {
	beatsImitation(t, "expert-p3", "imitate-search-p3", 3, 192)
}

// The committed 3-player colour-averaged network (policies/expert-p3-c3.onnx:
// expert-p3 on three colour renamings, its logits averaged;
// docs/training.md "Session 57": 0.77 ± 0.32 points a game ahead of
// search at the 3-player mixed table over seeds 7 to 86 (32,160 games),
// where session 56's w33 is 0.63 ± 0.31 ahead and r12 0.31 ± 0.31; 0.14 ±
// 0.27 ahead of w33 on the same games, level, and 0.46 ± 0.38 ahead of
// r12, clear; ahead of search on 13 of the 16 sets of 2,010 games, clear
// on 4) replays the first 6 games (one deal in its 6 seatings) of
// seed 7 of that table exactly as recorded (bin/dgeval -players 3 -agents
// policy:expert-p3-c3,search,heuristic -duplicate -seed 7), and one seat of
// it against two heuristic bots scores clearly more than imitate-search-p3
// (in these 192: +21.99 ± 2.90 against -0.26 ± 2.95; w33's averaged
// network +21.22 ± 2.56, r12's +23.71 ± 2.62, session 51's +21.60 ±
// 2.52, session 50's +25.03 ± 2.22, session 49's +24.59 ± 2.79, session
// 47's +24.13 ± 2.98, session 46's +25.59 ± 2.90).
func TestCommittedExpertP3C3Policy(t *testing.T) {
	replaysRecorded(t, "policy:expert-p3-c3,search,heuristic", 7, [][]int{
		{107, 118, 74}, {139, 109, 54}, {88, 93, 81}, {78, 103, 93}, {108, 74, 88}, {101, 112, 66},
	})
	beatsImitation(t, "expert-p3-c3", "imitate-search-p3", 3, 192)
}

// The committed 3-player split network (policies/expert-p3-split.onnx,
// docs/training.md "Session 64": python -m dgenv.export --later, one graph
// that plays expert-p3-c3 where its seat leads a trick and, on later cards,
// the 3-view average of the second step of --preset expert-p3-later (w34
// fitted to sampled-world values of its two best later cards, then that
// network fitted again to values of the split network's two best, its
// own step in the playouts); 1.54 ± 0.32 points a game ahead of search at
// the 3-player mixed table over seeds 7 to 86 (32,160 games), 0.30 ±
// 0.25 ahead of the first step and 0.77 ± 0.31 ahead of expert-p3-c3 on
// the same games) replays the first 6 games of seed 7 of that table
// exactly as recorded (bin/dgeval -players 3 -agents
// policy:expert-p3-split,search,heuristic -duplicate -seed 7), and one
// seat of it against two heuristic bots scores clearly more than
// imitate-search-p3 (in these 192: +20.79 ± 2.72 against -0.26 ± 2.95;
// the first step +23.53 ± 2.93, expert-p3-c3 +21.99 ± 2.90).
func TestCommittedExpertP3SplitPolicy(t *testing.T) {
	replaysRecorded(t, "policy:expert-p3-split,search,heuristic", 7, [][]int{
		{107, 113, 82}, {137, 101, 70}, {119, 93, 73}, {97, 110, 100}, {118, 90, 88}, {101, 120, 58},
	})
	beatsImitation(t, "expert-p3-split", "imitate-search-p3", 3, 192)
}

// The committed 5-player network (policies/expert-p5.onnx: a fourth step of
// --preset expert-rollout at 5 players, with the colour-averaged network
// in the rollouts and at the labelled seat, four rollouts a card and the
// averaged network as prior; docs/training.md "Session 38", "Session 39"
// and "Session 44") plays the 5-player game, and one seat of it against
// four heuristic bots scores clearly more than imitate-search-p5 in the
// same games (in these 100: +57.40 ± 9.35 against +11.03 ± 8.91; session
// 39's network +58.31 ± 9.51, session 38's +58.87 ± 9.01).
func TestCommittedExpertP5Policy(t *testing.T) {
	beatsImitation(t, "expert-p5", "imitate-search-p5", 5, 100)
}

// The committed 6-player network (policies/expert-p6.onnx, iteration 1 of
// --preset expert-rollout at 6 players, the policy iteration on the table's
// own values from session 33's network, iteration 22 of --preset expert
// continued warm; docs/training.md "Session 34") plays the 6-player game,
// and one seat of it against five heuristic bots scores clearly more than
// imitate-search-p6 in the same games (in these 240: +102.41 ± 7.84
// against +35.28 ± 7.26).
func TestCommittedExpertP6Policy(t *testing.T) {
	beatsImitation(t, "expert-p6", "imitate-search-p6", 6, 240)
}

// The committed 5-player colour-averaged network (policies/expert-p5-c3.onnx:
// expert-p5 on three colour renamings, its logits averaged;
// docs/training.md "Session 44": 0.12 ± 1.82 points a game behind search
// at the 5-player mixed table, seeds 7 to 21, where session 39's averaged
// network was 1.34 ± 1.80 behind, and 1.59 ± 1.10 points a game more in
// its own score in the same 6,000 games) replays the first 10 games (one
// deal in its 10 seatings) of seed 7 of that table exactly as recorded
// (bin/dgeval -players 5 -agents
// policy:expert-p5-c3,search,heuristic,random,heuristic -duplicate -seed
// 7), and one seat of it against four heuristic bots scores clearly more
// than imitate-search-p5 (in these 100: +63.28 ± 8.24 against +11.03 ±
// 8.91; session 39's averaged network +63.35 ± 10.12 in the same games).
func TestCommittedExpertP5C3Policy(t *testing.T) {
	replaysRecorded(t, "policy:expert-p5-c3,search,heuristic,random,heuristic", 7, [][]int{
		{263, 303, 279, 241, 230}, {234, 261, 191, 181, 217}, {282, 243, 247, 206, 194}, {210, 242, 204, 181, 267},
		{251, 271, 263, 219, 203}, {239, 209, 194, 225, 202}, {199, 282, 165, 152, 268}, {215, 222, 168, 144, 125},
		{215, 302, 223, 161, 215}, {290, 301, 204, 192, 203},
	})
	beatsImitation(t, "expert-p5-c3", "imitate-search-p5", 5, 100)
}

// The committed 5-player split network (policies/expert-p5-split.onnx,
// docs/training.md "Session 65": python -m dgenv.export --later, one graph
// that plays expert-p5-c3 where its seat leads a trick and, on later
// cards, the 3-view average of expert-p5 fitted at tau 3 to sampled-world
// values of expert-p5-c3's two best later cards, --preset expert-p5-later
// (which rebuilds it byte for byte); 1.16 ± 1.11 points a game ahead of expert-p5-c3 at the
// 5-player mixed table over seeds 7 to 36, 12,000 games, and 0.50 ± 1.06
// ahead of search) replays the first 10 games (one deal in its 10
// seatings) of seed 7 of that table exactly as recorded (bin/dgeval
// -players 5 -agents policy:expert-p5-split,search,heuristic,random,heuristic
// -duplicate -seed 7), and one seat of it against four heuristic bots
// scores clearly more than imitate-search-p5 (in these 100: +59.95 ± 9.07
// against +11.03 ± 8.91; expert-p5-c3 +63.28 ± 8.24).
func TestCommittedExpertP5SplitPolicy(t *testing.T) {
	replaysRecorded(t, "policy:expert-p5-split,search,heuristic,random,heuristic", 7, [][]int{
		{232, 256, 215, 193, 222}, {248, 276, 226, 179, 246}, {272, 246, 266, 172, 223}, {241, 246, 181, 182, 237},
		{253, 193, 252, 205, 226}, {311, 213, 210, 213, 236}, {187, 193, 272, 181, 286}, {244, 203, 192, 149, 135},
		{199, 347, 203, 148, 234}, {245, 272, 229, 202, 173},
	})
	beatsImitation(t, "expert-p5-split", "imitate-search-p5", 5, 100)
}

// The committed 6-player colour-averaged network (policies/expert-p6-c3.onnx:
// expert-p6 on three colour renamings, its logits averaged;
// docs/training.md "Session 37") replays the first 12 games (one deal in
// its 12 seatings) of seed 7 of the 6-player mixed table exactly as
// recorded (bin/dgeval -players 6 -agents
// policy:expert-p6-c3,search,heuristic,random,heuristic,random -duplicate
// -seed 7), and one seat of it against five heuristic bots scores clearly
// more than imitate-search-p6 (in these 240: +102.36 ± 7.97 against
// +35.28 ± 7.26; expert-p6 +102.41 ± 7.84 in the same games).
func TestCommittedExpertP6C3Policy(t *testing.T) {
	replaysRecorded(t, "policy:expert-p6-c3,search,heuristic,random,heuristic,random", 7, [][]int{
		{328, 323, 304, 321, 359, 243}, {370, 256, 283, 266, 209, 231}, {349, 404, 250, 264, 361, 225},
		{386, 273, 243, 230, 408, 267}, {323, 287, 337, 238, 256, 231}, {343, 383, 285, 257, 259, 180},
		{396, 354, 301, 293, 315, 232}, {293, 337, 258, 235, 253, 225}, {334, 404, 336, 168, 283, 231},
		{328, 322, 293, 200, 301, 224}, {334, 381, 255, 266, 361, 225}, {308, 274, 292, 234, 306, 251},
	})
	beatsImitation(t, "expert-p6-c3", "imitate-search-p6", 6, 240)
}

// The committed 6-player split network (policies/expert-p6-split.onnx,
// docs/training.md "Session 67": python -m dgenv.export --later, one graph
// that plays expert-p6-c3 where its seat leads a trick and, on later
// cards, the 3-view average of expert-p6 fitted at tau 3 to sampled-world
// values of expert-p6-c3's two best later cards, --preset expert-p6-later
// (which rebuilds it byte for byte); at the 6-player mixed table over seeds 7 to 36, 12,240
// games, 4.51 ± 1.34 points a game ahead of search and 1.20 ± 1.47 ahead
// of expert-p6-c3, ahead of it on each of the six sets) replays the first 12
// games (one deal in its 12 seatings) of seed 7 of that table exactly as
// recorded (bin/dgeval -players 6 -agents
// policy:expert-p6-split,search,heuristic,random,heuristic,random
// -duplicate -seed 7), and one seat of it against five heuristic bots
// scores clearly more than imitate-search-p6 (in these 240: +103.90 ± 7.29 against
// +35.28 ± 7.26; expert-p6-c3 +102.36 ± 7.97).
func TestCommittedExpertP6SplitPolicy(t *testing.T) {
	replaysRecorded(t, "policy:expert-p6-split,search,heuristic,random,heuristic,random", 7, [][]int{
		{327, 401, 351, 255, 373, 215}, {374, 260, 315, 252, 198, 239}, {342, 372, 260, 270, 295, 235},
		{406, 324, 227, 304, 341, 262}, {324, 333, 255, 224, 269, 306}, {343, 379, 305, 248, 325, 182},
		{426, 380, 300, 272, 268, 285}, {301, 323, 258, 221, 253, 240}, {357, 387, 313, 237, 299, 243},
		{377, 300, 300, 314, 280, 197}, {316, 333, 280, 254, 322, 279}, {336, 289, 333, 207, 305, 262},
	})
	beatsImitation(t, "expert-p6-split", "imitate-search-p6", 6, 240)
}

// beatsImitation plays the committed network name in one seat against
// players-1 heuristic bots (duplicate, seed 1), then the committed
// imitation network ref in the same games, and wants name's interval above
// 0 and above ref's mean, over n games.
func beatsImitation(t *testing.T, name, ref string, players, n int) {
	t.Helper()
	reg, g, ps := registeredCommitted(t, players)
	p := ps[name]
	if p == nil {
		t.Fatalf("policies/%s.onnx is not committed", name)
	}
	if m := p.Meta(); m.GameName != card.GameName || m.ObsSize != g.Observation().Size || m.NumActions != card.NumActions {
		t.Fatalf("policies/%s.onnx: game %s, %d observation elements, %d actions; want the %d-player card game's", name, m.GameName, m.ObsSize, m.NumActions, players)
	}
	diff := func(agent string) env.Estimate {
		agents := []string{agent}
		for range players - 1 {
			agents = append(agents, "heuristic")
		}
		res, err := env.PlayMatchOf(reg, g, env.MatchConfig{Agents: agents, Games: n, Seed: 1, Duplicate: true})
		if err != nil {
			t.Fatal(err) // an illegal action is an error here
		}
		for _, a := range res.Summarize() {
			if a.Name == agent {
				return a.Diff
			}
		}
		t.Fatalf("no record of %s", agent)
		return env.Estimate{}
	}
	net, imitate := diff("policy:"+name), diff("policy:"+ref)
	if net.Mean-net.CI95 <= max(0, imitate.Mean) {
		t.Errorf("against %d heuristic bots, %d duplicate games: %s %+.2f ± %.2f, %s %+.2f ± %.2f; want %s's interval above 0 and above %s's mean",
			players-1, n, name, net.Mean, net.CI95, ref, imitate.Mean, imitate.CI95, name, ref)
	}
	t.Logf("against %d heuristic bots, %d duplicate games: %s %+.2f ± %.2f, %s %+.2f ± %.2f", players-1, n, name, net.Mean, net.CI95, ref, imitate.Mean, imitate.CI95)
}

// registeredCommitted is a registry with the committed policies of
// policies/ registered (their policy:<name> and search:policy:<name> bots),
// the policies, and the card game at the given player count.
func registeredCommitted(t *testing.T, players int) (*env.Registry, env.Game, map[string]*policy.Policy) {
	t.Helper()
	reg := games.Default()
	ps, err := policy.LoadFS(reg, os.DirFS("../../policies"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := policy.Register(reg, ps); err != nil {
		t.Fatal(err)
	}
	typ, err := reg.Lookup(card.GameName)
	if err != nil {
		t.Fatal(err)
	}
	g, err := typ.New(map[string]any{"players": players})
	if err != nil {
		t.Fatal(err)
	}
	return reg, g, ps
}

// One decision of the committed expert-iteration network (512-256-256),
// averaged over a game's decisions (one core): the budget is 100 µs.
func BenchmarkDecisionExpert(b *testing.B) {
	benchDecisions(b, policy.Bot{Policy: committed(b, "expert"), Greedy: true})
}

// The same for the committed 4-player bare network, expert-p4 (the same
// shape as expert).
func BenchmarkDecisionExpertP4(b *testing.B) {
	benchDecisions(b, policy.Bot{Policy: committed(b, "expert-p4"), Greedy: true})
}

// The committed 4-player colour-averaged network: three forward passes of
// expert-p4's shape and the Gathers of their views.
func BenchmarkDecisionExpertP4C3(b *testing.B) {
	benchDecisions(b, policy.Bot{Policy: committed(b, "expert-p4-c3"), Greedy: true})
}

// The same for the committed 3-player network (512-256-256 over the
// 3-player game's 680 inputs), on 3-player positions.
func BenchmarkDecisionExpertP3(b *testing.B) {
	benchDecisionsAt(b, policy.Bot{Policy: committed(b, "expert-p3"), Greedy: true}, 3)
}

// The committed 3-player colour-averaged network, on 3-player positions.
func BenchmarkDecisionExpertP3C3(b *testing.B) {
	benchDecisionsAt(b, policy.Bot{Policy: committed(b, "expert-p3-c3"), Greedy: true}, 3)
}

// The committed 3-player split network: one of its two 3-view networks a
// decision (a Where on the trick position computes only the branch taken),
// on 3-player positions.
func BenchmarkDecisionExpertP3Split(b *testing.B) {
	benchDecisionsAt(b, policy.Bot{Policy: committed(b, "expert-p3-split"), Greedy: true}, 3)
}

// The committed 5-player split network, on 5-player positions.
func BenchmarkDecisionExpertP5Split(b *testing.B) {
	benchDecisionsAt(b, policy.Bot{Policy: committed(b, "expert-p5-split"), Greedy: true}, 5)
}

// The committed 6-player split network, on 6-player positions.
func BenchmarkDecisionExpertP6Split(b *testing.B) {
	benchDecisionsAt(b, policy.Bot{Policy: committed(b, "expert-p6-split"), Greedy: true}, 6)
}

// The same for the committed 5-player network (512-256-256 over the
// 5-player game's inputs), on 5-player positions.
func BenchmarkDecisionExpertP5(b *testing.B) {
	benchDecisionsAt(b, policy.Bot{Policy: committed(b, "expert-p5"), Greedy: true}, 5)
}

// The committed 5-player colour-averaged network, on 5-player positions.
func BenchmarkDecisionExpertP5C3(b *testing.B) {
	benchDecisionsAt(b, policy.Bot{Policy: committed(b, "expert-p5-c3"), Greedy: true}, 5)
}

// The same for the committed 6-player network, on 6-player positions.
func BenchmarkDecisionExpertP6(b *testing.B) {
	benchDecisionsAt(b, policy.Bot{Policy: committed(b, "expert-p6"), Greedy: true}, 6)
}

// The committed 6-player colour-averaged network: three passes of
// expert-p6's shape, on 6-player positions.
func BenchmarkDecisionExpertP6C3(b *testing.B) {
	benchDecisionsAt(b, policy.Bot{Policy: committed(b, "expert-p6-c3"), Greedy: true}, 6)
}
