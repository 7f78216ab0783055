package duel

import (
	"fmt"
	"math/bits"
	"strings"
)

// WriteObservation encodes what player knows, from player's side, into
// dst[:ObsSize] (see Game.ObservationLayout). The opponent's hand appears
// only as its size and the deck only as its size. No allocation.
func (s *State) WriteObservation(dst []uint8, player int) {
	d := (*[ObsSize]uint8)(dst)
	*d = [ObsSize]uint8{}
	t := &s.t
	o := 1 - player
	flip := 0
	if player == Goliath {
		flip = 7 // y -> 7-y: Goliath's back row is rank 0
	}
	at := func(plane, sq int) int {
		y := sq / 8
		if flip != 0 {
			y = 7 - y
		}
		return OffBoard + plane*NumSquares + y*8 + sq%8
	}
	d[at(0, int(t.pos[player]))] = 1
	d[at(1, int(t.pos[o]))] = 1
	for m := t.rocks; m != 0; m &= m - 1 {
		d[at(2, bits.TrailingZeros64(m))] = 1
	}
	for m := t.trees; m != 0; m &= m - 1 {
		d[at(3, bits.TrailingZeros64(m))] = 1
	}
	if t.spearSq >= 0 {
		d[at(4, int(t.spearSq))] = 1
	}
	if t.stonesLeft > 0 {
		for sq, c := range t.stonesOn {
			if c > 0 {
				d[at(5, sq)] = c
			}
		}
	}
	*(*[NumKinds]uint8)(d[OffHand:]) = t.hand[player]
	*(*[NumKinds]uint8)(d[OffDiscards:]) = t.discards
	pub := d[OffPublic : OffPublic+publicLen]
	pub[0] = t.handSize[o]
	pub[1] = t.deckLen
	pub[2] = t.wounds[player]
	pub[3] = t.wounds[o]
	if t.spearSq < 0 {
		pub[4] = 1
	}
	pub[5] = t.stonesHeld
	pub[6] = t.round
	pub[7] = uint8(player)
	if t.over {
		return
	}
	ph := d[OffPhase : OffPhase+phaseLen]
	if f := stagePhase[t.stage]; f < PhaseNone { // not at a chance node's draw stage
		ph[f] = 1
	}
	switch t.stage {
	case stNegateD, stNegateG:
		ph[6] = t.moveLen
	case stDefendD, stDefendG:
		ph[7] = t.attack
		ph[8] = t.attackDist
	}
}

// ObservationTensor returns player's observation in a new slice.
func (s *State) ObservationTensor(player int) []uint8 {
	out := make([]uint8, ObsSize)
	s.WriteObservation(out, player)
	return out
}

// ActionString names an action: "move-orth-2 N", "sling-3+stone-fast".
func (s *State) ActionString(player int, a Action) string { return ActionName(a) }

// ActionName names an action id without a state.
func ActionName(a Action) string {
	switch {
	case a == ActPass:
		return "pass"
	case a >= ActMove && a < ActNegate:
		return KindNames[(a-ActMove)/8] + " " + DirNames[(a-ActMove)%8]
	case a >= ActNegate && a < ActSword:
		return fmt.Sprintf("negate after %d", a-ActNegate)
	case a >= ActSword && a < ActThrow:
		return "sword " + KindNames[KindThrustOrth+a-ActSword]
	case a >= ActThrow && a < ActSling:
		return KindNames[KindThrow2+a-ActThrow]
	case a >= ActSling && a < ActDefend:
		return KindNames[KindSling2+(a-ActSling)/3] + "+" + KindNames[KindStoneFast+(a-ActSling)%3]
	case a >= ActDefend && a < ActEvent:
		return "defend " + KindNames[KindBlock+a-ActDefend]
	case a >= ActEvent && a < ActDiscard:
		return "event " + KindNames[KindReinforcements+a-ActEvent]
	case a >= ActDiscard && a < NumActions:
		return "discard " + KindNames[a-ActDiscard]
	}
	return fmt.Sprintf("action %d?", a)
}

var seatNames = [NumPlayers]string{"Goliath", "David"}

// SeatName is "Goliath" or "David".
func SeatName(seat int) string { return seatNames[seat] }

// String shows the whole state for people (hidden information included):
// the board with rank 8 on top, hands, piles, wounds and the decision asked.
func (s *State) String() string {
	t := &s.t
	var sb strings.Builder
	fmt.Fprintf(&sb, "round %d/%d", t.round+1, s.game.params.MaxRounds)
	switch {
	case t.over && t.winner >= 0:
		fmt.Fprintf(&sb, " game over: %s wins\n", seatNames[t.winner])
	case t.over:
		sb.WriteString(" game over: draw\n")
	default:
		fmt.Fprintf(&sb, " %s to %s", seatNames[stagePlayer[t.stage]], stagePhase[t.stage])
		switch t.stage {
		case stNegateD, stNegateG:
			fmt.Fprintf(&sb, " (%s moving %d %s from %s)", seatNames[1-stagePlayer[t.stage]], t.moveLen, DirNames[t.moveDir], SquareName(int(t.moveFrom)))
		case stDefendD, stDefendG:
			fmt.Fprintf(&sb, " (%s at distance %d)", AttackNames[t.attack], t.attackDist)
		}
		sb.WriteByte('\n')
	}
	s.writeBoard(&sb)
	spear := "held"
	if t.spearSq >= 0 {
		spear = "on " + SquareName(int(t.spearSq))
	}
	fmt.Fprintf(&sb, "Goliath wounds %d spear %s hand %s\n", t.wounds[Goliath], spear, handString(&t.hand[Goliath]))
	fmt.Fprintf(&sb, "David   wounds %d stones %d hand %s\n", t.wounds[David], t.stonesHeld, handString(&t.hand[David]))
	fmt.Fprintf(&sb, "deck %d discards %s\n", t.deckLen, handString(&t.discards))
	return sb.String()
}

// writeBoard draws the board, rank 8 on top: figures, rocks, trees and the
// tokens on it (all public).
func (s *State) writeBoard(sb *strings.Builder) {
	t := &s.t
	for y := 7; y >= 0; y-- {
		fmt.Fprintf(sb, "%d ", y+1)
		for x := range 8 {
			sq := Square(x, y)
			c := byte('.')
			switch {
			case int(t.pos[Goliath]) == sq:
				c = 'G'
			case int(t.pos[David]) == sq:
				c = 'D'
			case s.IsRock(sq):
				c = 'R'
			case s.IsTree(sq):
				c = 'T'
			}
			tok := byte(' ')
			if int(t.spearSq) == sq {
				tok = '^'
			} else if n := t.stonesOn[sq]; n > 0 {
				tok = '0' + n
			}
			sb.WriteByte(c)
			sb.WriteByte(tok)
		}
		sb.WriteByte('\n')
	}
	sb.WriteString("  a b c d e f g h\n")
}

func handString(h *[NumKinds]uint8) string {
	var parts []string
	for k, n := range h {
		switch {
		case n == 1:
			parts = append(parts, KindNames[k])
		case n > 1:
			parts = append(parts, fmt.Sprintf("%dx%s", n, KindNames[k]))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
