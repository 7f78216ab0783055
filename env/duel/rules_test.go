package duel

import (
	"slices"
	"testing"
)

func TestMovesNeedAFreePathOnTheBoard(t *testing.T) {
	for _, tc := range []struct {
		name  string
		u     setup
		legal []Action
	}{
		{"rocks, trees, the other figure and the edge block a move; a stone token does not",
			setup{goliath: "d4", david: "b4", rocks: []string{"d6"}, trees: []string{"f4"}, stonesOn: map[string]int{"d3": 1},
				goliathHand: []int{KindMoveOrth2}, stage: stMoveG},
			[]Action{ActPass, move(KindMoveOrth2, dirOf("S"))}},
		{"a diagonal move from a corner has one direction",
			setup{goliath: "a1", david: "h8", goliathHand: []int{KindMoveDiag1}, stage: stMoveG},
			[]Action{ActPass, move(KindMoveDiag1, dirOf("NE"))}},
		{"an any-direction move goes all eight ways on an open board",
			setup{goliath: "d4", david: "h8", goliathHand: []int{KindMoveAny2}, stage: stMoveG},
			[]Action{ActPass, 49, 50, 51, 52, 53, 54, 55, 56}},
		{"David moves in his own phase with his own cards",
			setup{goliath: "h8", david: "a1", davidHand: []int{KindMoveOrth3}, stage: stMoveG},
			[]Action{ActPass, move(KindMoveOrth3, dirOf("N")), move(KindMoveOrth3, dirOf("E"))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := position(t, tc.u)
			wantLegal(t, s, tc.legal...)
		})
	}
}

func TestNegateStopsTheMoveAfterKSquares(t *testing.T) {
	for k, want := range []string{"d7", "d6", "d5", "d4"} {
		name := "negate after " + string(rune('0'+k)) + " squares leaves Goliath on " + want
		if k == 3 {
			name = "no negate lets Goliath go all 3 squares to " + want
		}
		t.Run(name, func(t *testing.T) {
			s := position(t, setup{goliath: "d7", david: "h1", goliathHand: []int{KindMoveOrth3}, davidHand: []int{KindNegate}, stage: stMoveG})
			apply(t, s, move(KindMoveOrth3, dirOf("S")))
			wantStage(t, s, David, PhaseNegate)
			wantLegal(t, s, ActPass, ActNegate, ActNegate+1, ActNegate+2)
			if k < 3 {
				apply(t, s, ActNegate+k)
			} else {
				apply(t, s, ActPass)
			}
			if got := SquareName(s.Position(Goliath)); got != want {
				t.Errorf("Goliath on %s, want %s", got, want)
			}
			d := s.Discards()
			if d[KindMoveOrth3] != 1 {
				t.Errorf("discarded move cards = %d, want 1 (the move card stays discarded)", d[KindMoveOrth3])
			}
			if wantNeg := uint8(0); k < 3 && d[KindNegate] != 1 || k == 3 && d[KindNegate] != wantNeg {
				t.Errorf("discarded negates = %d", d[KindNegate])
			}
		})
	}
	t.Run("a move of 1 can be negated only after 0 squares", func(t *testing.T) {
		s := position(t, setup{goliath: "h1", david: "d1", davidHand: []int{KindMoveOrth1}, goliathHand: []int{KindNegate}, stage: stMoveG})
		apply(t, s, move(KindMoveOrth1, dirOf("N")))
		wantStage(t, s, Goliath, PhaseNegate)
		wantLegal(t, s, ActPass, ActNegate)
		apply(t, s, ActNegate)
		if got := SquareName(s.Position(David)); got != "d1" {
			t.Errorf("David on %s, want d1", got)
		}
	})
	t.Run("without a negate card the decision is skipped and the move completes", func(t *testing.T) {
		s := position(t, setup{goliath: "d7", david: "h1", goliathHand: []int{KindMoveOrth3, KindBlock}, davidHand: []int{KindBlock}, stage: stMoveG})
		apply(t, s, move(KindMoveOrth3, dirOf("S")))
		if got := SquareName(s.Position(Goliath)); got != "d4" {
			t.Errorf("Goliath on %s, want d4", got)
		}
		if len(s.History()) != 1 {
			t.Errorf("History() = %v, want the move alone", s.History())
		}
	})
}

func TestEnteringASquareWithYourOwnTokenPicksItUp(t *testing.T) {
	t.Run("Goliath passing through his spear takes it", func(t *testing.T) {
		s := position(t, setup{goliath: "d7", david: "h1", spear: "d5", goliathHand: []int{KindMoveOrth3}, stage: stMoveG})
		apply(t, s, move(KindMoveOrth3, dirOf("S")))
		if s.SpearSquare() != -1 {
			t.Errorf("spear on %d, want held", s.SpearSquare())
		}
	})
	t.Run("a negated move stops short of the spear and leaves it", func(t *testing.T) {
		s := position(t, setup{goliath: "d7", david: "h1", spear: "d5", goliathHand: []int{KindMoveOrth3}, davidHand: []int{KindNegate}, stage: stMoveG})
		apply(t, s, move(KindMoveOrth3, dirOf("S")), ActNegate+1)
		if got := SquareName(s.SpearSquare()); got != "d5" {
			t.Errorf("spear on %s, want d5", got)
		}
	})
	t.Run("David takes every stone token on every square he enters", func(t *testing.T) {
		s := position(t, setup{goliath: "h8", david: "d1", stonesHeld: 1, stonesOn: map[string]int{"d2": 2, "d3": 1, "e2": 1},
			davidHand: []int{KindMoveOrth2}, stage: stMoveD})
		apply(t, s, move(KindMoveOrth2, dirOf("N")))
		if s.StonesHeld() != 4 || s.StonesOn(sq(t, "e2")) != 1 || s.StonesOn(sq(t, "d2")) != 0 {
			t.Errorf("stones held %d, on e2 %d, on d2 %d; want 4, 1, 0", s.StonesHeld(), s.StonesOn(sq(t, "e2")), s.StonesOn(sq(t, "d2")))
		}
	})
	t.Run("a figure never picks up the other's token", func(t *testing.T) {
		s := position(t, setup{goliath: "d7", david: "h1", stonesOn: map[string]int{"d6": 1}, goliathHand: []int{KindMoveOrth1}, stage: stMoveG})
		apply(t, s, move(KindMoveOrth1, dirOf("S")))
		if s.StonesOn(sq(t, "d6")) != 1 {
			t.Errorf("stone on d6 gone after Goliath entered it")
		}
	})
}

func TestAttackReach(t *testing.T) {
	swords := []int{KindThrustOrth, KindThrustDiag, KindSlashOrth, KindSlashDiag, KindChopOrth, KindChopDiag}
	throws := []int{KindThrow2, KindThrow3, KindThrow4}
	slings := []int{KindSling2, KindSling3, KindSling5, KindStoneFast}
	for _, tc := range []struct {
		name  string
		u     setup
		legal []Action
	}{
		{"an orthogonal neighbour can be hit by the orthogonal swords only",
			setup{goliath: "e5", david: "e4", goliathHand: swords, stage: stAttackG},
			[]Action{ActPass, sword(KindThrustOrth), sword(KindSlashOrth), sword(KindChopOrth)}},
		{"a diagonal neighbour can be hit by the diagonal swords only",
			setup{goliath: "e5", david: "f4", goliathHand: swords, stage: stAttackG},
			[]Action{ActPass, sword(KindThrustDiag), sword(KindSlashDiag), sword(KindChopDiag)}},
		{"a spear is thrown exactly at the card's range",
			setup{goliath: "e8", david: "e5", goliathHand: throws, stage: stAttackG},
			[]Action{ActPass, throw(KindThrow3)}},
		{"a spear is thrown over a rock",
			setup{goliath: "e8", david: "h5", rocks: []string{"f7"}, goliathHand: throws, stage: stAttackG},
			[]Action{ActPass, throw(KindThrow3)}},
		{"a sling reaches any distance up to its range",
			setup{goliath: "e4", david: "e1", stonesHeld: 1, davidHand: slings, stage: stAttackG},
			[]Action{ActPass, sling(KindSling3, KindStoneFast), sling(KindSling5, KindStoneFast)}},
		{"a sling shoots over a rock",
			setup{goliath: "b4", david: "e1", rocks: []string{"d2", "c3"}, stonesHeld: 1, davidHand: slings, stage: stAttackG},
			[]Action{ActPass, sling(KindSling3, KindStoneFast), sling(KindSling5, KindStoneFast)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantLegal(t, position(t, tc.u), tc.legal...)
		})
	}
	// Decisions whose only action would be pass are skipped: the state
	// goes on to the next decision (here, the end of the game).
	for _, tc := range []struct {
		name string
		u    setup
	}{
		{"a tree between stops a thrown spear", setup{goliath: "e8", david: "e5", trees: []string{"e6"}, goliathHand: throws, stage: stAttackG}},
		{"a spear lying on the board cannot be thrown", setup{goliath: "e8", david: "e5", spear: "a1", goliathHand: throws, stage: stAttackG}},
		{"a sword does not reach two squares", setup{goliath: "e5", david: "e3", goliathHand: swords, stage: stAttackG}},
		{"a tree between stops a sling", setup{goliath: "e4", david: "e1", trees: []string{"e3"}, stonesHeld: 1, davidHand: slings, stage: stAttackD}},
		{"a sling needs a stone token", setup{goliath: "e4", david: "e1", davidHand: slings, stage: stAttackD}},
		{"a sling needs a stone card", setup{goliath: "e4", david: "e1", stonesHeld: 2, davidHand: []int{KindSling5}, stage: stAttackD}},
		{"a sling cannot reach beyond its range", setup{goliath: "e7", david: "e1", stonesHeld: 2, davidHand: slings, stage: stAttackD}},
		{"a target off every line cannot be slung at", setup{goliath: "f4", david: "e1", stonesHeld: 2, davidHand: slings, stage: stAttackD}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := position(t, tc.u)
			if !s.IsTerminal() {
				t.Fatalf("a decision was asked: %s %v\n%s", s.Phase(), names(s.LegalActions()), s)
			}
			if s.Wounds(Goliath)+s.Wounds(David) != 0 {
				t.Errorf("wounds %d %d after no attack", s.Wounds(Goliath), s.Wounds(David))
			}
		})
	}
}

// The defence table of DUEL.md, attack type by defence.
var defenceTable = map[int][3]bool{ // block, dodge, duck
	AttackThrust: {true, true, false},
	AttackSlash:  {false, true, true},
	AttackChop:   {true, false, true},
	AttackThrow:  {true, true, false},
	AttackFast:   {true, true, false},
	AttackCurved: {false, true, true},
	AttackSinker: {true, false, true},
}

// attackSetups make each attack type, the defender holding all three defences.
func attackSetup(tb testing.TB, attack int) (*State, Action, int) {
	defs := []int{KindBlock, KindDodge, KindDuck}
	spear := "a1" // without the spear a sword attack is of the card's type
	switch attack {
	case AttackThrust, AttackSlash, AttackChop:
		k := KindThrustOrth + 2*(attack-AttackThrust)
		return position(tb, setup{goliath: "e5", david: "e4", spear: spear, goliathHand: []int{k}, davidHand: defs, stage: stAttackG}), sword(k), David
	case AttackThrow:
		return position(tb, setup{goliath: "e8", david: "e6", goliathHand: []int{KindThrow2}, davidHand: defs, stage: stAttackG}), throw(KindThrow2), David
	}
	stone := KindStoneFast + attack - AttackFast
	return position(tb, setup{goliath: "e4", david: "e1", stonesHeld: 1, goliathHand: defs, davidHand: []int{KindSling3, stone}, stage: stAttackD}), sling(KindSling3, stone), Goliath
}

func TestDefenceTable(t *testing.T) {
	for attack := AttackThrust; attack <= AttackSinker; attack++ {
		for d := range 3 {
			stops := defenceTable[attack][d]
			verb := " does not stop "
			if stops {
				verb = " stops "
			}
			t.Run(KindNames[KindBlock+d]+verb+AttackNames[attack], func(t *testing.T) {
				s, a, defender := attackSetup(t, attack)
				apply(t, s, a)
				wantStage(t, s, defender, PhaseDefend)
				if got, _ := s.PendingAttack(); got != attack {
					t.Fatalf("PendingAttack() = %s, want %s", AttackNames[got], AttackNames[attack])
				}
				if Stops(KindBlock+d, attack) != stops {
					t.Errorf("Stops(%s, %s) = %v, want %v", KindNames[KindBlock+d], AttackNames[attack], !stops, stops)
				}
				if got := s.IsLegal(defend(KindBlock + d)); got != stops {
					t.Fatalf("IsLegal(defend %s) = %v, want %v", KindNames[KindBlock+d], got, stops)
				}
				if stops {
					apply(t, s, defend(KindBlock+d))
					if s.Wounds(defender) != 0 {
						t.Errorf("defender wounded %d times after a stopping defence", s.Wounds(defender))
					}
				}
			})
		}
		t.Run("taking a "+AttackNames[attack]+" is one wound", func(t *testing.T) {
			s, a, defender := attackSetup(t, attack)
			apply(t, s, a, ActPass)
			if s.Wounds(defender) != 1 || s.Wounds(1-defender) != 0 {
				t.Errorf("wounds %d %d, want 1 for seat %d", s.Wounds(0), s.Wounds(1), defender)
			}
		})
	}
	t.Run("a sword card used with the spear is a thrust whatever it says", func(t *testing.T) {
		s := position(t, setup{goliath: "e5", david: "e4", goliathHand: []int{KindChopOrth}, davidHand: []int{KindBlock, KindDodge, KindDuck}, stage: stAttackG})
		apply(t, s, sword(KindChopOrth))
		if got, _ := s.PendingAttack(); got != AttackThrust {
			t.Fatalf("PendingAttack() = %s, want thrust", AttackNames[got])
		}
		wantLegal(t, s, ActPass, defend(KindBlock), defend(KindDodge))
		apply(t, s, defend(KindDodge))
		if s.SpearSquare() != -1 {
			t.Errorf("a stopped spear thrust left the spear on %d", s.SpearSquare())
		}
	})
	t.Run("an attack the defender cannot stop is taken without a decision", func(t *testing.T) {
		s := position(t, setup{goliath: "e5", david: "e4", spear: "a1", goliathHand: []int{KindSlashOrth}, davidHand: []int{KindBlock}, stage: stAttackG})
		apply(t, s, sword(KindSlashOrth))
		if s.Wounds(David) != 1 {
			t.Errorf("David wounds = %d, want 1", s.Wounds(David))
		}
	})
}

func TestSpearAndStoneLoss(t *testing.T) {
	t.Run("a stopped thrown spear lands on David's square and is lost", func(t *testing.T) {
		s := position(t, setup{goliath: "e8", david: "e6", goliathHand: []int{KindThrow2, KindThrustOrth}, davidHand: []int{KindBlock}, stage: stAttackG, maxRounds: 2})
		apply(t, s, throw(KindThrow2), defend(KindBlock))
		if got := SquareName(s.SpearSquare()); got != "e6" {
			t.Errorf("spear on %s, want e6", got)
		}
	})
	t.Run("a thrown spear that hits stays with Goliath", func(t *testing.T) {
		s := position(t, setup{goliath: "e8", david: "e6", goliathHand: []int{KindThrow2}, stage: stAttackG})
		apply(t, s, throw(KindThrow2))
		if s.SpearSquare() != -1 || s.Wounds(David) != 1 {
			t.Errorf("spear %d wounds %d, want held and 1", s.SpearSquare(), s.Wounds(David))
		}
	})
	t.Run("a stopped stone lands on Goliath's square", func(t *testing.T) {
		s := position(t, setup{goliath: "e4", david: "e1", stonesHeld: 2, goliathHand: []int{KindDodge}, davidHand: []int{KindSling3, KindStoneCurved}, stage: stAttackD})
		apply(t, s, sling(KindSling3, KindStoneCurved), defend(KindDodge))
		if s.StonesHeld() != 1 || s.StonesOn(sq(t, "e4")) != 1 {
			t.Errorf("stones held %d, on e4 %d; want 1 and 1", s.StonesHeld(), s.StonesOn(sq(t, "e4")))
		}
	})
	t.Run("a stone that hits is gone", func(t *testing.T) {
		s := position(t, setup{goliath: "e4", david: "e1", stonesHeld: 2, davidHand: []int{KindSling3, KindStoneCurved}, stage: stAttackD})
		apply(t, s, sling(KindSling3, KindStoneCurved))
		if s.StonesHeld() != 1 || s.StonesOn(sq(t, "e4")) != 0 || s.Wounds(Goliath) != 1 {
			t.Errorf("stones held %d, on e4 %d, Goliath wounds %d; want 1, 0, 1", s.StonesHeld(), s.StonesOn(sq(t, "e4")), s.Wounds(Goliath))
		}
	})
	t.Run("without the spear a sword attack is of the card's type", func(t *testing.T) {
		s := position(t, setup{goliath: "e5", david: "e4", spear: "h1", goliathHand: []int{KindSlashOrth}, davidHand: []int{KindDodge}, stage: stAttackG})
		apply(t, s, sword(KindSlashOrth))
		if got, _ := s.PendingAttack(); got != AttackSlash {
			t.Errorf("PendingAttack() = %s, want slash", AttackNames[got])
		}
	})
}

func TestThirdWoundEndsTheGame(t *testing.T) {
	s := position(t, setup{goliath: "e5", david: "e4", wounds: [2]int{0, 2}, goliathHand: []int{KindThrustOrth}, stage: stAttackG, maxRounds: 100})
	apply(t, s, sword(KindThrustOrth))
	if !s.IsTerminal() || s.Winner() != Goliath || s.CurrentPlayer() != TerminalPlayer {
		t.Fatalf("terminal %v winner %d, want Goliath's win", s.IsTerminal(), s.Winner())
	}
	if r := s.Returns(); !slices.Equal(r, []float64{1, -1}) {
		t.Errorf("Returns() = %v, want [1 -1]", r)
	}
	if r := s.Rewards(); !slices.Equal(r, []float64{1, -1}) {
		t.Errorf("Rewards() = %v, want [1 -1]", r)
	}
	if s.NumLegal() != 0 {
		t.Errorf("NumLegal() = %d at the end", s.NumLegal())
	}
}

func TestHandLimitFallsWithWounds(t *testing.T) {
	seven := []int{KindMoveOrth1, KindMoveOrth1, KindNegate, KindBlock, KindDodge, KindDuck, KindRearm}
	for wounds := range 3 {
		t.Run("David with "+string(rune('0'+wounds))+" wounds keeps "+string(rune('0'+7-wounds))+" cards", func(t *testing.T) {
			s := position(t, setup{goliath: "h8", david: "a1", wounds: [2]int{0, wounds}, davidHand: seven, stage: stDiscardG})
			for range wounds {
				wantStage(t, s, David, PhaseDiscard)
				if s.IsLegal(ActPass) {
					t.Fatalf("pass is legal in the discard phase")
				}
				wantLegal(t, s, discardOf(KindMoveOrth1), discardOf(KindNegate), discardOf(KindBlock), discardOf(KindDodge), discardOf(KindDuck), discardOf(KindRearm))
				apply(t, s, discardOf(KindMoveOrth1))
			}
			if !s.IsTerminal() || s.HandSize(David) != 7-wounds {
				t.Errorf("terminal %v hand %d, want the round over with %d cards", s.IsTerminal(), s.HandSize(David), 7-wounds)
			}
		})
	}
	t.Run("Goliath discards before David", func(t *testing.T) {
		s := position(t, setup{goliath: "h8", david: "a1", wounds: [2]int{1, 1}, goliathHand: seven, davidHand: []int{KindSling2, KindSling2, KindSling3, KindSling3, KindStoneFast, KindStoneFast, KindStoneFast}, stage: stDiscardG})
		wantStage(t, s, Goliath, PhaseDiscard)
		apply(t, s, discardOf(KindRearm))
		wantStage(t, s, David, PhaseDiscard)
		apply(t, s, discardOf(KindSling3))
		if !s.IsTerminal() {
			t.Errorf("the round did not end after both discards")
		}
	})
}

func TestDrawPhaseRefillsTheDeck(t *testing.T) {
	t.Run("Goliath draws the top card, then David", func(t *testing.T) {
		s := position(t, setup{goliath: "h8", david: "a1", stage: stEnd, maxRounds: 2})
		// The deck is in kind order: the top two are the rearms.
		if s.HandSize(Goliath) != 1 || s.HandSize(David) != 1 || s.Hand(Goliath)[KindRearm] != 1 || s.DeckSize() != DeckSize-2 {
			t.Errorf("hands %d %d deck %d, want 1 1 %d", s.HandSize(Goliath), s.HandSize(David), s.DeckSize(), DeckSize-2)
		}
	})
	t.Run("an empty deck is refilled by shuffling the discards", func(t *testing.T) {
		s := position(t, setup{goliath: "h8", david: "a1", stage: stDiscardD})
		tb := &s.t
		for i := range int(tb.deckLen) {
			tb.discards[tb.deck[i]]++
		}
		tb.discLen, tb.deckLen = tb.deckLen, 0
		s.draw(Goliath)
		s.draw(David)
		if s.DeckSize() != DeckSize-2 || s.HandSize(Goliath) != 1 || s.HandSize(David) != 1 || tb.discLen != 0 || cardCount(s) != DeckSize {
			t.Errorf("deck %d hands %d %d discards %d cards %d", s.DeckSize(), s.HandSize(0), s.HandSize(1), tb.discLen, cardCount(s))
		}
	})
	t.Run("with deck and discards empty nothing is drawn", func(t *testing.T) {
		s := position(t, setup{goliath: "h8", david: "a1", stage: stDiscardD})
		s.t.deckLen, s.t.discLen, s.t.discards = 0, 0, [NumKinds]uint8{}
		s.draw(Goliath)
		if s.HandSize(Goliath) != 0 {
			t.Errorf("drew %d cards from nothing", s.HandSize(Goliath))
		}
	})
}

func TestEvents(t *testing.T) {
	t.Run("Reinforcements draws two", func(t *testing.T) {
		s := position(t, setup{goliath: "h8", david: "a1", goliathHand: []int{KindReinforcements}, stage: stEventG})
		wantLegal(t, s, ActPass, event(KindReinforcements))
		apply(t, s, event(KindReinforcements))
		if s.HandSize(Goliath) != 2 || s.Discards()[KindReinforcements] != 1 {
			t.Errorf("hand %d, want 2 after Reinforcements", s.HandSize(Goliath))
		}
	})
	t.Run("Disarm discards one of the opponent's cards at random", func(t *testing.T) {
		s := position(t, setup{goliath: "h8", david: "a1", goliathHand: []int{KindDisarm}, davidHand: []int{KindBlock, KindDodge}, stage: stEventG})
		apply(t, s, event(KindDisarm))
		d := s.Discards()
		if s.HandSize(David) != 1 || d[KindBlock]+d[KindDodge] != 1 || d[KindDisarm] != 1 {
			t.Errorf("David's hand %d, discards %v", s.HandSize(David), d)
		}
	})
	t.Run("Disarm is not playable against an empty hand", func(t *testing.T) {
		s := position(t, setup{goliath: "h8", david: "a1", davidHand: []int{KindDisarm}, stage: stEventG})
		if !s.IsTerminal() {
			t.Errorf("asked %s %v with nothing to disarm", s.Phase(), names(s.LegalActions()))
		}
	})
	t.Run("Disarm draws each card equally often", func(t *testing.T) {
		var got [NumKinds]int
		for seed := range uint64(600) {
			s := position(t, setup{goliath: "h8", david: "a1", goliathHand: []int{KindDisarm}, davidHand: []int{KindBlock, KindBlock, KindDodge}, stage: stEventG})
			s.rng = newRNG(seed)
			apply(t, s, event(KindDisarm))
			d := s.Discards()
			got[KindBlock] += int(d[KindBlock])
			got[KindDodge] += int(d[KindDodge])
		}
		// 400 and 200 expected; 5 sigma is about 58.
		if got[KindBlock] < 340 || got[KindBlock] > 460 {
			t.Errorf("block discarded %d times of 600, want about 400", got[KindBlock])
		}
	})
	t.Run("Rearm gives Goliath his spear back", func(t *testing.T) {
		s := position(t, setup{goliath: "h8", david: "a1", spear: "c3", goliathHand: []int{KindRearm}, stage: stEventG})
		apply(t, s, event(KindRearm))
		if s.SpearSquare() != -1 {
			t.Errorf("spear on %d after Rearm", s.SpearSquare())
		}
	})
	t.Run("Rearm gives David the two stones on the lowest squares, x then y", func(t *testing.T) {
		s := position(t, setup{goliath: "h8", david: "a1", stonesOn: map[string]int{"b5": 1, "a7": 1, "c2": 2}, davidHand: []int{KindRearm}, stage: stEventG})
		apply(t, s, event(KindRearm))
		if s.StonesHeld() != 2 || s.StonesOn(sq(t, "c2")) != 2 || s.StonesOn(sq(t, "a7")) != 0 || s.StonesOn(sq(t, "b5")) != 0 {
			t.Errorf("held %d, c2 %d a7 %d b5 %d", s.StonesHeld(), s.StonesOn(sq(t, "c2")), s.StonesOn(sq(t, "a7")), s.StonesOn(sq(t, "b5")))
		}
	})
	t.Run("Rearm takes two stones from one square", func(t *testing.T) {
		s := position(t, setup{goliath: "h8", david: "a1", stonesOn: map[string]int{"c2": 3}, davidHand: []int{KindRearm}, stage: stEventG})
		apply(t, s, event(KindRearm))
		if s.StonesHeld() != 2 || s.StonesOn(sq(t, "c2")) != 1 {
			t.Errorf("held %d, c2 %d; want 2 and 1", s.StonesHeld(), s.StonesOn(sq(t, "c2")))
		}
	})
	t.Run("Rearm is not playable with nothing on the board", func(t *testing.T) {
		s := position(t, setup{goliath: "h8", david: "a1", goliathHand: []int{KindRearm}, davidHand: []int{KindRearm}, stage: stEventG})
		if !s.IsTerminal() {
			t.Errorf("asked %s %v with nothing to rearm", s.Phase(), names(s.LegalActions()))
		}
	})
	t.Run("Goliath's event comes before David's", func(t *testing.T) {
		s := position(t, setup{goliath: "h8", david: "a1", goliathHand: []int{KindReinforcements}, davidHand: []int{KindReinforcements}, stage: stEventG})
		wantStage(t, s, Goliath, PhaseEvent)
		apply(t, s, ActPass)
		wantStage(t, s, David, PhaseEvent)
	})
}

func TestRoundLimitIsADraw(t *testing.T) {
	g := MustNewGame(DefaultParams())
	s := g.NewInitialState(5)
	for !s.IsTerminal() {
		a := ActPass
		if !s.IsLegal(ActPass) {
			a = s.LegalActions()[0]
		}
		apply(t, s, a)
	}
	if s.Round() != 100 || s.Winner() != -1 {
		t.Errorf("ended after %d rounds, winner %d; want a draw after 100", s.Round(), s.Winner())
	}
	if r := s.Returns(); !slices.Equal(r, []float64{0, 0}) {
		t.Errorf("Returns() = %v, want [0 0]", r)
	}
}

func TestParams(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   map[string]any
		want int
		err  string
	}{
		{"no parameters give 100 rounds", nil, 100, ""},
		{"max_rounds is read", map[string]any{"max_rounds": 30}, 30, ""},
		{"a float that is an integer is accepted", map[string]any{"max_rounds": 12.0}, 12, ""},
		{"zero rounds is refused", map[string]any{"max_rounds": 0}, 0, "max_rounds"},
		{"too many rounds is refused", map[string]any{"max_rounds": 251}, 0, "max_rounds"},
		{"a string is refused", map[string]any{"max_rounds": "7"}, 0, "max_rounds"},
		{"an unknown parameter is refused", map[string]any{"players": 2}, 0, "players"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseParams(tc.in)
			if tc.err != "" {
				if err == nil || !errorsIs(err) || !contains(err.Error(), tc.err) {
					t.Fatalf("ParseParams(%v) error = %v, want a ParamError naming %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil || p.MaxRounds != tc.want {
				t.Fatalf("ParseParams(%v) = %+v, %v; want max_rounds %d", tc.in, p, err, tc.want)
			}
		})
	}
}
