package duel

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/davidgoliath/dgenv/env"
)

// field reads a described position's field by name.
func field(tb testing.TB, fs []env.Field, name string) any {
	tb.Helper()
	for _, f := range fs {
		if f.Name == name {
			return f.Value
		}
	}
	tb.Fatalf("no field %q in %v", name, fs)
	return nil
}

// TestDescribeAgreesWithTheState walks whole games (heuristic and random,
// both roles) and checks every described position against the state's
// accessors: the legal choices are exactly the legal actions, each spends
// cards its seat holds and aims where the action goes; the board, hands,
// wounds and tokens are the state's.
func TestDescribeAgreesWithTheState(t *testing.T) {
	g := MustNewGame(DefaultParams())
	bots := [][2]stateBot{{HeuristicBot{}, RandomBot{}}, {RandomBot{}, HeuristicBot{}}, {HeuristicBot{}, HeuristicBot{}}}
	for seed := range uint64(12) {
		s := g.NewInitialState(seed)
		rng := newRNG(seed)
		b := bots[seed%3]
		for steps := 0; ; steps++ {
			v := s.Describe()
			checkDescribed(t, s, v)
			if s.IsTerminal() {
				break
			}
			a := b[s.CurrentPlayer()].ActState(s, &rng)
			words := s.DescribeAction(a)
			if !strings.HasPrefix(words, SeatName(s.CurrentPlayer())+" ") || !strings.HasSuffix(words, ".") {
				t.Fatalf("seed %d step %d: DescribeAction(%s) = %q, want a sentence starting with the seat", seed, steps, ActionName(a), words)
			}
			before := s.Clone()
			apply(t, s, a)
			if a == event(KindDisarm) {
				o := 1 - before.CurrentPlayer()
				for k := range NumKinds {
					if s.Hand(o)[k] < before.Hand(o)[k] && !strings.Contains(words, KindTitles[k]) {
						t.Errorf("DescribeAction(disarm) = %q, want it to name the card lost, %s", words, KindTitles[k])
					}
				}
			}
			if s.IsTerminal() && !strings.Contains(words, "wins") && !strings.Contains(words, "draw") {
				t.Errorf("DescribeAction of the last action = %q, want the result", words)
			}
		}
	}
}

func checkDescribed(t *testing.T, s *State, v []env.Field) {
	t.Helper()
	if got, want := field(t, v, "over").(bool), s.IsTerminal(); got != want {
		t.Fatalf("over = %v, want %v", got, want)
	}
	if got, want := field(t, v, "to_act").(int), max(s.CurrentPlayer(), -1); got != want {
		t.Fatalf("to_act = %d, want %d", got, want)
	}
	if got := field(t, v, "figures").([]int); got[0] != s.Position(Goliath) || got[1] != s.Position(David) {
		t.Fatalf("figures = %v, want %d %d", got, s.Position(Goliath), s.Position(David))
	}
	if got := field(t, v, "spear").(int); got != s.SpearSquare() {
		t.Fatalf("spear = %d, want %d", got, s.SpearSquare())
	}
	on := 0
	for _, sq := range field(t, v, "stones").([]int) {
		on++
		if s.StonesOn(sq) == 0 {
			t.Fatalf("a stone described on %s, the board has none", SquareName(sq))
		}
	}
	for _, kind := range []string{"rocks", "trees"} {
		sqs := field(t, v, kind).([]int)
		if len(sqs) != 2 {
			t.Fatalf("%s = %v, want 2 squares", kind, sqs)
		}
		for _, sq := range sqs {
			if (kind == "rocks" && !s.IsRock(sq)) || (kind == "trees" && !s.IsTree(sq)) {
				t.Fatalf("%s lists %s", kind, SquareName(sq))
			}
		}
	}
	seats := field(t, v, "seats").([][]env.Field)
	stonesHeld := 0
	for p, seat := range seats {
		var hand [NumKinds]uint8
		for _, c := range field(t, seat, "hand").([][]env.Field) {
			hand[field(t, c, "kind").(int)]++
		}
		if hand != s.Hand(p) || field(t, seat, "hand_size").(int) != s.HandSize(p) {
			t.Fatalf("seat %d hand = %v, want %v", p, hand, s.Hand(p))
		}
		if field(t, seat, "wounds").(int) != s.Wounds(p) || field(t, seat, "hand_limit").(int) != s.HandLimit(p) {
			t.Fatalf("seat %d wounds/limit = %v/%v, want %d/%d", p, field(t, seat, "wounds"), field(t, seat, "hand_limit"), s.Wounds(p), s.HandLimit(p))
		}
		stonesHeld += field(t, seat, "stones_held").(int)
	}
	if stonesHeld != s.StonesHeld() || stonesHeld+on > NumStones {
		t.Fatalf("stones held %d, on the board %d; the state holds %d", stonesHeld, on, s.StonesHeld())
	}
	var legal []int
	for _, c := range field(t, v, "legal").([][]env.Field) {
		a := field(t, c, "action").(int)
		legal = append(legal, a)
		if text := field(t, c, "text").(string); text == "" {
			t.Fatalf("action %s has no words", ActionName(a))
		}
		need := [NumKinds]uint8{}
		for _, k := range field(t, c, "cards").([]int) {
			need[k]++
			if need[k] > s.Hand(s.CurrentPlayer())[k] {
				t.Fatalf("action %s spends a %s the seat does not hold", ActionName(a), KindNames[k])
			}
		}
		to := field(t, c, "to").(int)
		if group := field(t, c, "group").(string); group == "move" {
			// Played and let go, the figure ends on to.
			p := s.CurrentPlayer()
			c := s.Clone()
			apply(t, c, a)
			if c.Phase() == PhaseNegate && !c.IsTerminal() {
				apply(t, c, ActPass)
			}
			if c.Position(p) != to {
				t.Fatalf("move %s aims at %s, the figure goes to %s", ActionName(a), SquareName(to), SquareName(c.Position(p)))
			}
		} else if group == "attack" && to != s.Position(1-s.CurrentPlayer()) {
			t.Fatalf("attack %s aims at %s, not the opponent", ActionName(a), SquareName(to))
		}
	}
	if !slices.Equal(legal, s.LegalActions()) {
		t.Fatalf("legal choices %v, want %v", names(legal), names(s.LegalActions()))
	}
	if p := field(t, v, "prompt").(string); p == "" {
		t.Fatal("no prompt")
	}
}

// The words for actions whose outcome the action alone does not show.
func TestDescribeActionSaysWhatCameOfIt(t *testing.T) {
	cases := []struct {
		name    string
		setup   setup
		actions []Action // played before the one described
		a       Action
		want    string
	}{
		{"a move no one can negate", setup{goliath: "d7", david: "h1", goliathHand: []int{KindMoveOrth3}, stage: stMoveG, maxRounds: 50},
			nil, move(KindMoveOrth3, dirOf("S")), "Goliath plays Move orth 3 to go south from d7 to d4. Goliath goes from d7 to d4."},
		{"a move that may be negated", setup{goliath: "d7", david: "h1", goliathHand: []int{KindMoveOrth3}, davidHand: []int{KindNegate}, stage: stMoveG, maxRounds: 50},
			nil, move(KindMoveOrth3, dirOf("S")), "Goliath plays Move orth 3 to go south from d7 to d4. David may negate."},
		{"a negate", setup{goliath: "d7", david: "h1", goliathHand: []int{KindMoveOrth3}, davidHand: []int{KindNegate}, stage: stMoveG, maxRounds: 50},
			[]Action{move(KindMoveOrth3, dirOf("S"))}, ActNegate + 1, "David plays Negate: Goliath stops after 1 square. Goliath goes from d7 to d6."},
		{"a move onto the spear", setup{goliath: "d7", david: "h1", spear: "d5", goliathHand: []int{KindMoveOrth3}, stage: stMoveG, maxRounds: 50},
			nil, move(KindMoveOrth3, dirOf("S")), "Goliath plays Move orth 3 to go south from d7 to d4. Goliath goes from d7 to d4 and picks up the spear."},
		{"a thrust David cannot stop", setup{goliath: "d5", david: "d4", goliathHand: []int{KindThrustOrth}, stage: stAttackG, maxRounds: 50},
			nil, sword(KindThrustOrth), "Goliath thrusts the spear at David (Thrust orth). David cannot stop it: wounded (1 of 3)."},
		{"a thrust David may stop", setup{goliath: "d5", david: "d4", goliathHand: []int{KindThrustOrth}, davidHand: []int{KindBlock}, stage: stAttackG, maxRounds: 50},
			nil, sword(KindThrustOrth), "Goliath thrusts the spear at David (Thrust orth). David may defend."},
		{"a stone Goliath cannot stop", setup{goliath: "d2", david: "d1", davidHand: []int{KindSling3, KindStoneFast}, stonesHeld: 1, stage: stAttackD, maxRounds: 50},
			nil, sling(KindSling3, KindStoneFast), "David slings a fast stone (Sling 3) at Goliath, 1 square away. Goliath cannot stop it: wounded (1 of 3)."},
		{"a slash David cannot stop", setup{goliath: "d2", david: "d1", spear: "a8", goliathHand: []int{KindSlashOrth}, stage: stAttackG, maxRounds: 50},
			nil, sword(KindSlashOrth), "Goliath attacks David with the sword: a slash (Slash orth). David cannot stop it: wounded (1 of 3)."},
		{"a stopped throw", setup{goliath: "d7", david: "d4", goliathHand: []int{KindThrow3}, davidHand: []int{KindBlock}, stage: stAttackG, maxRounds: 50},
			[]Action{throw(KindThrow3)}, defend(KindBlock), "David stops the thrown spear with Block. The spear falls on d4."},
		{"the third wound", setup{goliath: "d6", david: "d1", goliathHand: []int{KindDuck}, davidHand: []int{KindSling5, KindStoneCurved}, stonesHeld: 1, wounds: [2]int{2, 0}, stage: stAttackD, maxRounds: 50},
			[]Action{sling(KindSling5, KindStoneCurved)}, ActPass, "Goliath takes the curved stone: wounded (3 of 3). David wins: Goliath has 3 wounds."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := position(t, c.setup)
			apply(t, s, c.actions...)
			if got := s.DescribeAction(c.a); got != c.want {
				t.Errorf("DescribeAction(%s) = %q, want %q", ActionName(c.a), got, c.want)
			}
		})
	}
}

// TestRecordDescribe replays a duel's record through env.Record.Describe:
// a position after every action, the last one final, and each step the
// seat that played it.
func TestRecordDescribe(t *testing.T) {
	reg := env.NewRegistry()
	reg.MustRegister(SpielType())
	g, err := SpielType().Make(env.Values{"max_rounds": 100})
	if err != nil {
		t.Fatal(err)
	}
	s := g.NewInitialState(3)
	rng := newRNG(3)
	var seats []int
	for !s.IsTerminal() {
		seats = append(seats, s.CurrentPlayer())
		if err := s.ApplyAction(HeuristicBot{}.Act(s, &rng)); err != nil {
			t.Fatal(err)
		}
	}
	rec := env.RecordOf(s)
	for _, from := range []int{0, 5, len(rec.Actions)} {
		pos, steps, err := rec.Describe(reg, from)
		if err != nil {
			t.Fatal(err)
		}
		if len(pos) != len(rec.Actions)-from+1 || len(steps) != len(rec.Actions)-from {
			t.Fatalf("Describe(from %d): %d positions and %d steps for %d actions", from, len(pos), len(steps), len(rec.Actions))
		}
		if !field(t, pos[len(pos)-1], "over").(bool) {
			t.Fatalf("Describe(from %d): the last position is not over", from)
		}
		for j, st := range steps {
			if st.Seat != seats[from+j] || st.Action != rec.Actions[from+j] || st.Text == "" {
				t.Fatalf("step %d = %+v, want seat %d action %d", from+j, st, seats[from+j], rec.Actions[from+j])
			}
		}
	}
	if _, _, err := rec.Describe(reg, len(rec.Actions)+1); err == nil {
		t.Error("Describe past the end: no error")
	}
	bad := *rec
	bad.Actions = append(slices.Clone(rec.Actions[:4]), 116) // discard a reinforcements card: not legal there
	if _, _, err := bad.Describe(reg, 0); !errors.Is(err, ErrIllegalAction) {
		t.Errorf("Describe of a record with an illegal action: %v, want ErrIllegalAction", err)
	}
}

// TestRecordDescribeOpenEnded: a record that does not say whether its game
// ended (read back from the wire) is described to wherever its actions
// lead, its end taken from the replay; its actions and returns are still
// checked.
func TestRecordDescribeOpenEnded(t *testing.T) {
	reg := env.NewRegistry()
	reg.MustRegister(SpielType())
	g, err := SpielType().Make(env.Values{"max_rounds": 100})
	if err != nil {
		t.Fatal(err)
	}
	s := g.NewInitialState(4)
	rng := newRNG(4)
	for !s.IsTerminal() {
		if err := s.ApplyAction(HeuristicBot{}.Act(s, &rng)); err != nil {
			t.Fatal(err)
		}
	}
	full := env.RecordOf(s)
	for _, tc := range []struct {
		name    string
		actions int
		want    bool
	}{
		{"the whole game", len(full.Actions), true},
		{"the game cut after 7 actions", 7, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := *full
			rec.Actions = full.Actions[:tc.actions]
			rec.Terminal = !tc.want // what the record says is not taken
			if !tc.want {
				rec.Returns = []float64{0, 0}
			}
			if _, _, err := rec.Describe(reg, 0); err == nil {
				t.Fatalf("Describe with Terminal = %v: no error", rec.Terminal)
			}
			pos, steps, err := rec.DescribeOpenEnded(reg, 0)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Terminal != tc.want || len(pos) != tc.actions+1 || len(steps) != tc.actions {
				t.Fatalf("Terminal = %v, %d positions, %d steps; want %v, %d, %d", rec.Terminal, len(pos), len(steps), tc.want, tc.actions+1, tc.actions)
			}
			if over := field(t, pos[len(pos)-1], "over").(bool); over != tc.want {
				t.Fatalf("the last position's over = %v, want %v", over, tc.want)
			}
			rec.Returns = slices.Clone(rec.Returns)
			rec.Returns[0] += 2
			if _, _, err := rec.DescribeOpenEnded(reg, 0); err == nil {
				t.Error("a wrong return: no error")
			}
		})
	}
}
