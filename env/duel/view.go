package duel

import (
	"fmt"
	"strings"

	"github.com/davidgoliath/dgenv/env"
)

// The duel for people: a position as the browser page draws it, and each
// action in words (env.Describer). The page draws the board, the hands, the
// wounds and the choices from these fields alone; nothing here is read
// from the observation tensor, and nothing is on the hot path.
//
// Squares are numbered y*8 + x (x = file a..h, y = rank 1..8), as
// everywhere in this package; SquareName writes them ("e8").

// KindTitles are the cards' names for people, indexed by kind.
var KindTitles = [NumKinds]string{
	"Move orth 1", "Move orth 2", "Move orth 3", "Move diag 1", "Move diag 2", "Move any 1", "Move any 2",
	"Negate",
	"Thrust orth", "Thrust diag", "Slash orth", "Slash diag", "Chop orth", "Chop diag",
	"Throw 2", "Throw 3", "Throw 4",
	"Sling 2", "Sling 3", "Sling 4", "Sling 5",
	"Fast stone", "Curved stone", "Sinker stone",
	"Block", "Dodge", "Duck",
	"Reinforcements", "Disarm", "Rearm",
}

// kindUses says what each card does, for a card's tooltip.
var kindUses = [NumKinds]string{
	"move exactly 1 square orthogonally", "move exactly 2 squares orthogonally", "move exactly 3 squares orthogonally",
	"move exactly 1 square diagonally", "move exactly 2 squares diagonally",
	"move exactly 1 square in any direction", "move exactly 2 squares in any direction",
	"stop the opponent's move after fewer squares",
	"Goliath: attack an orthogonally adjacent David (a thrust)", "Goliath: attack a diagonally adjacent David (a thrust)",
	"Goliath: attack an orthogonally adjacent David (a slash; a thrust while he holds the spear)",
	"Goliath: attack a diagonally adjacent David (a slash; a thrust while he holds the spear)",
	"Goliath: attack an orthogonally adjacent David (a chop; a thrust while he holds the spear)",
	"Goliath: attack a diagonally adjacent David (a chop; a thrust while he holds the spear)",
	"Goliath: throw the spear at David exactly 2 squares away along a line",
	"Goliath: throw the spear at David exactly 3 squares away along a line",
	"Goliath: throw the spear at David exactly 4 squares away along a line",
	"David: sling a stone at Goliath up to 2 squares away along a line", "David: sling a stone at Goliath up to 3 squares away along a line",
	"David: sling a stone at Goliath up to 4 squares away along a line", "David: sling a stone at Goliath up to 5 squares away along a line",
	"David: a stone for the sling (stopped by block and dodge)", "David: a stone for the sling (stopped by dodge and duck)",
	"David: a stone for the sling (stopped by block and duck)",
	"stops a thrust, a chop, a thrown spear, a fast or a sinker stone", "stops a thrust, a slash, a thrown spear, a fast or a curved stone",
	"stops a slash, a chop, a curved or a sinker stone",
	"event: draw 2 cards", "event: the opponent discards a card at random", "event: take back your spear, or up to 2 stones, from the board",
}

// attackWords name the attack types in a sentence, indexed by type id.
var attackWords = [8]string{"", "thrust", "slash", "chop", "thrown spear", "fast stone", "curved stone", "sinker stone"}

var dirWords = [8]string{"north", "north-east", "east", "south-east", "south", "south-west", "west", "north-west"}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// squareAlong is the square n squares from sq in direction d (no bounds check:
// the caller walks a legal path).
func squareAlong(sq, d, n int) int { return Square(sq%8+n*dirX[d], sq/8+n*dirY[d]) }

// Describe returns the position with both hands face up (env.Describer):
//
//	round, max_rounds     the round in progress (1-based) and the limit
//	to_act, phase, over   the seat to decide (-1 when over), its kind of decision ("over" at the end)
//	winner                0 or 1, -1 (none yet, or a draw)
//	prompt                what the seat to act may do now, in words (or how the game ended)
//	rocks, trees          squares
//	figures               [Goliath's square, David's square]
//	spear                 the spear's square on the board, -1 while Goliath holds it
//	stones                the stone tokens on the board, a square per token
//	deck, discards        cards left in the deck, cards in the discard pile
//	pending, path         the move or attack awaiting the other seat's answer, in words; a pending move's squares
//	seats                 per seat: seat, name, hand [{kind, name, use}] by kind, hand_size, hand_limit,
//	                      wounds, spear_held (Goliath), stones_held (David)
//	legal                 the seat to act's legal actions, ascending: {action, group, text, cards, to}
//	                      (group: pass, event, move, negate, attack, defend, discard; cards: the kinds
//	                      it spends; to: the square it aims at, -1 for none)
func (s *State) Describe() []env.Field {
	t := &s.t
	rocks, trees, stones := []int{}, []int{}, []int{}
	for sq := range NumSquares {
		if s.IsRock(sq) {
			rocks = append(rocks, sq)
		}
		if s.IsTree(sq) {
			trees = append(trees, sq)
		}
		for range t.stonesOn[sq] {
			stones = append(stones, sq)
		}
	}
	seats := make([][]env.Field, NumPlayers)
	for p := range NumPlayers {
		hand := [][]env.Field{}
		for k := range NumKinds {
			for range t.hand[p][k] {
				hand = append(hand, []env.Field{{Name: "kind", Value: k}, {Name: "name", Value: KindTitles[k]}, {Name: "use", Value: kindUses[k]}})
			}
		}
		stonesHeld := 0
		if p == David {
			stonesHeld = int(t.stonesHeld)
		}
		seats[p] = []env.Field{
			{Name: "seat", Value: p}, {Name: "name", Value: seatNames[p]},
			{Name: "hand", Value: hand}, {Name: "hand_size", Value: int(t.handSize[p])},
			{Name: "hand_limit", Value: s.HandLimit(p)}, {Name: "wounds", Value: int(t.wounds[p])},
			{Name: "spear_held", Value: p == Goliath && t.spearSq < 0}, {Name: "stones_held", Value: stonesHeld},
		}
	}
	round := min(int(t.round)+1, s.game.params.MaxRounds)
	phase := "over"
	if !t.over {
		phase = s.Phase().String()
	}
	pending, path := s.pendingWords()
	var legal [][]env.Field
	for _, a := range s.LegalActions() {
		group, cards, to := s.actionShape(a)
		legal = append(legal, []env.Field{
			{Name: "action", Value: a}, {Name: "group", Value: group}, {Name: "text", Value: s.choiceWords(a)},
			{Name: "cards", Value: cards}, {Name: "to", Value: to},
		})
	}
	if legal == nil {
		legal = [][]env.Field{}
	}
	return []env.Field{
		{Name: "round", Value: round}, {Name: "max_rounds", Value: s.game.params.MaxRounds},
		{Name: "to_act", Value: max(s.CurrentPlayer(), -1)}, {Name: "phase", Value: phase},
		{Name: "over", Value: t.over}, {Name: "winner", Value: int(t.winner)},
		{Name: "prompt", Value: s.prompt()},
		{Name: "rocks", Value: rocks}, {Name: "trees", Value: trees},
		{Name: "figures", Value: []int{int(t.pos[Goliath]), int(t.pos[David])}},
		{Name: "spear", Value: int(t.spearSq)}, {Name: "stones", Value: stones},
		{Name: "deck", Value: int(t.deckLen)}, {Name: "discards", Value: int(t.discLen)},
		{Name: "pending", Value: pending}, {Name: "path", Value: path},
		{Name: "seats", Value: seats},
		{Name: "legal", Value: legal},
	}
}

// pendingWords: the move awaiting a negate or the attack awaiting a
// defence, and a pending move's squares.
func (s *State) pendingWords() (string, []int) {
	t := &s.t
	path := []int{}
	if t.over {
		return "", path
	}
	switch t.stage {
	case stNegateD, stNegateG:
		mover := 1 - int(stagePlayer[t.stage])
		from, d, n := int(t.moveFrom), int(t.moveDir), int(t.moveLen)
		for i := 1; i <= n; i++ {
			path = append(path, squareAlong(from, d, i))
		}
		return fmt.Sprintf("%s is moving %s %s from %s to %s", seatNames[mover], plural(n, "square", "squares"), dirWords[d],
			SquareName(from), SquareName(squareAlong(from, d, n))), path
	case stDefendD, stDefendG:
		attacker := 1 - int(stagePlayer[t.stage])
		return fmt.Sprintf("%s attacks with a %s (%s) from %s away", seatNames[attacker], attackWords[t.attack],
			KindTitles[t.attackKind], plural(int(t.attackDist), "square", "squares")), path
	}
	return "", path
}

// prompt says what the seat to act may do, or how the game ended.
func (s *State) prompt() string {
	t := &s.t
	if t.over {
		if t.winner < 0 {
			return "A draw: " + plural(s.game.params.MaxRounds, "round", "rounds") + " without a death."
		}
		return fmt.Sprintf("%s wins: %s has %d wounds.", seatNames[t.winner], seatNames[1-t.winner], MaxWounds)
	}
	p := int(stagePlayer[t.stage])
	who := seatNames[p]
	switch t.stage {
	case stEventG, stEventD:
		return who + ": play an event card, or pass."
	case stMoveG, stMoveD:
		return who + ": move (a Move card, then the square to go to), or pass."
	case stNegateD, stNegateG:
		pending, _ := s.pendingWords()
		return who + ": " + pending + ". Negate it (stop after fewer squares) or let it go."
	case stAttackG:
		if t.spearSq < 0 {
			return who + ": attack with the spear (a Sword card on an adjacent David, or a Throw card at his exact distance), or pass."
		}
		return who + ": attack with a Sword card (David adjacent), or pass."
	case stAttackD:
		return who + ": attack (a Sling card and a Stone card, then Goliath's square), or pass."
	case stDefendD, stDefendG:
		pending, _ := s.pendingWords()
		return who + ": " + pending + ". Defend with a card that stops it, or take the wound."
	case stDiscardG, stDiscardD:
		return fmt.Sprintf("%s: %d cards, over the hand limit of %d: discard one.", who, t.handSize[p], s.HandLimit(p))
	}
	return ""
}

// actionShape is a legal action's group, the card kinds it spends and the
// square it aims at (-1 for none).
func (s *State) actionShape(a Action) (group string, cards []int, to int) {
	t := &s.t
	cards, to = []int{}, -1
	switch {
	case a == ActPass:
		return "pass", cards, to
	case a < ActNegate:
		k, d := (a-ActMove)/8, (a-ActMove)%8
		p := int(stagePlayer[t.stage])
		return "move", append(cards, k), squareAlong(int(t.pos[p]), d, moveLen[k])
	case a < ActSword:
		return "negate", append(cards, KindNegate), squareAlong(int(t.moveFrom), int(t.moveDir), a-ActNegate)
	case a < ActThrow:
		return "attack", append(cards, KindThrustOrth+a-ActSword), int(t.pos[David])
	case a < ActSling:
		return "attack", append(cards, KindThrow2+a-ActThrow), int(t.pos[David])
	case a < ActDefend:
		return "attack", append(cards, KindSling2+(a-ActSling)/3, KindStoneFast+(a-ActSling)%3), int(t.pos[Goliath])
	case a < ActEvent:
		return "defend", append(cards, KindBlock+a-ActDefend), to
	case a < ActDiscard:
		return "event", append(cards, KindReinforcements+a-ActEvent), to
	}
	return "discard", append(cards, a-ActDiscard), to
}

// choiceWords names a legal action as a choice offered to the seat to act.
func (s *State) choiceWords(a Action) string {
	t := &s.t
	group, cards, to := s.actionShape(a)
	switch group {
	case "pass":
		switch t.stage {
		case stEventG, stEventD:
			return "Pass: no event"
		case stMoveG, stMoveD:
			return "Pass: stay on " + SquareName(int(t.pos[stagePlayer[t.stage]]))
		case stNegateD, stNegateG:
			return "Let the move go to " + SquareName(squareAlong(int(t.moveFrom), int(t.moveDir), int(t.moveLen)))
		case stDefendD, stDefendG:
			return "Take the wound"
		}
		return "Pass: no attack"
	case "move":
		return fmt.Sprintf("%s: %s to %s", KindTitles[cards[0]], dirWords[(a-ActMove)%8], SquareName(to))
	case "negate":
		k := a - ActNegate
		if k == 0 {
			return "Negate: no move at all"
		}
		return fmt.Sprintf("Negate: stop after %s, on %s", plural(k, "square", "squares"), SquareName(to))
	case "attack":
		if len(cards) == 2 {
			return fmt.Sprintf("%s with a %s at Goliath on %s", KindTitles[cards[0]], strings.ToLower(KindTitles[cards[1]]), SquareName(to))
		}
		if cards[0] >= KindThrow2 {
			return fmt.Sprintf("%s: throw the spear at David on %s", KindTitles[cards[0]], SquareName(to))
		}
		if t.spearSq < 0 {
			return fmt.Sprintf("%s: a spear thrust at David on %s", KindTitles[cards[0]], SquareName(to))
		}
		return fmt.Sprintf("%s: a sword %s at David on %s", KindTitles[cards[0]], AttackNames[AttackThrust+(cards[0]-KindThrustOrth)/2], SquareName(to))
	case "defend":
		return fmt.Sprintf("%s: stop the %s", KindTitles[cards[0]], attackWords[t.attack])
	case "event":
		return fmt.Sprintf("%s (%s)", KindTitles[cards[0]], strings.TrimPrefix(kindUses[cards[0]], "event: "))
	}
	return "Discard " + KindTitles[cards[0]]
}

// DescribeAction says what the seat to act does by action a and what comes
// of it, up to the next decision (env.Describer): "Goliath plays Move any 2
// and goes north-east from e8 to g6." It plays a on a clone to see the
// outcome (a Disarm's card, a move no one could negate, a wound no one
// could stop).
func (s *State) DescribeAction(a Action) string {
	if !s.IsLegal(a) {
		return fmt.Sprintf("%s: action %d is not legal here", ActionName(a), a)
	}
	t := &s.t
	p := int(stagePlayer[t.stage])
	o := 1 - p
	who, other := seatNames[p], seatNames[o]
	c := s.Clone()
	c.ApplyUnchecked(a)
	u := &c.t
	_, cards, to := s.actionShape(a)
	var sb strings.Builder
	moved := func(q int) {
		if u.pos[q] != t.pos[q] {
			fmt.Fprintf(&sb, " %s goes from %s to %s", seatNames[q], SquareName(int(t.pos[q])), SquareName(int(u.pos[q])))
			if q == Goliath && t.spearSq >= 0 && u.spearSq < 0 {
				sb.WriteString(" and picks up the spear")
			} else if q == David && u.stonesHeld > t.stonesHeld {
				fmt.Fprintf(&sb, " and picks up %s", plural(int(u.stonesHeld-t.stonesHeld), "stone", "stones"))
			}
			sb.WriteByte('.')
		}
	}
	switch t.stage {
	case stEventG, stEventD:
		if a == ActPass {
			fmt.Fprintf(&sb, "%s plays no event.", who)
			break
		}
		k := cards[0]
		fmt.Fprintf(&sb, "%s plays %s", who, KindTitles[k])
		switch k {
		case KindReinforcements:
			fmt.Fprintf(&sb, " and draws %s.", plural(int(u.handSize[p])-int(t.handSize[p])+1, "card", "cards"))
		case KindDisarm:
			for j := range NumKinds {
				if u.hand[o][j] < t.hand[o][j] {
					fmt.Fprintf(&sb, ": %s discards %s, drawn at random.", other, KindTitles[j])
				}
			}
		case KindRearm:
			if p == Goliath {
				sb.WriteString(" and takes back the spear.")
			} else {
				fmt.Fprintf(&sb, " and takes back %s.", plural(int(u.stonesHeld-t.stonesHeld), "stone", "stones"))
			}
		}
	case stMoveG, stMoveD:
		if a == ActPass {
			fmt.Fprintf(&sb, "%s does not move.", who)
			break
		}
		d := (a - ActMove) % 8
		fmt.Fprintf(&sb, "%s plays %s to go %s from %s to %s.", who, KindTitles[cards[0]], dirWords[d], SquareName(int(t.pos[p])), SquareName(to))
		if u.pos[p] == t.pos[p] {
			fmt.Fprintf(&sb, " %s may negate.", other)
		} else {
			moved(p)
		}
	case stNegateD, stNegateG:
		if a == ActPass {
			fmt.Fprintf(&sb, "%s lets the move go.", who)
		} else if k := a - ActNegate; k == 0 {
			fmt.Fprintf(&sb, "%s plays Negate: %s does not move.", who, other)
		} else {
			fmt.Fprintf(&sb, "%s plays Negate: %s stops after %s.", who, other, plural(k, "square", "squares"))
		}
		moved(o)
	case stAttackG, stAttackD:
		if a == ActPass {
			fmt.Fprintf(&sb, "%s does not attack.", who)
			break
		}
		switch {
		case len(cards) == 2:
			fmt.Fprintf(&sb, "%s slings a %s (%s) at %s, %s away.", who, attackWords[AttackFast+cards[1]-KindStoneFast], KindTitles[cards[0]], other,
				plural(int(lines[t.pos[David]][t.pos[Goliath]].dist), "square", "squares"))
		case cards[0] >= KindThrow2:
			fmt.Fprintf(&sb, "%s throws the spear (%s) at %s, %s away.", who, KindTitles[cards[0]], other,
				plural(int(lines[t.pos[Goliath]][t.pos[David]].dist), "square", "squares"))
		case t.spearSq < 0:
			fmt.Fprintf(&sb, "%s thrusts the spear at %s (%s).", who, other, KindTitles[cards[0]])
		default:
			fmt.Fprintf(&sb, "%s attacks %s with the sword: a %s (%s).", who, other, attackWords[AttackThrust+(cards[0]-KindThrustOrth)/2], KindTitles[cards[0]])
		}
		if u.wounds[o] > t.wounds[o] {
			fmt.Fprintf(&sb, " %s cannot stop it: wounded (%d of %d).", other, u.wounds[o], MaxWounds)
		} else if u.attack != 0 {
			fmt.Fprintf(&sb, " %s may defend.", other)
		}
	case stDefendD, stDefendG:
		if a == ActPass {
			fmt.Fprintf(&sb, "%s takes the %s: wounded (%d of %d).", who, attackWords[t.attack], u.wounds[p], MaxWounds)
			break
		}
		fmt.Fprintf(&sb, "%s stops the %s with %s.", who, attackWords[t.attack], KindTitles[cards[0]])
		switch t.attack {
		case AttackThrow:
			fmt.Fprintf(&sb, " The spear falls on %s.", SquareName(int(u.spearSq)))
		case AttackFast, AttackCurved, AttackSinker:
			fmt.Fprintf(&sb, " The stone falls on %s.", SquareName(int(u.pos[Goliath])))
		}
	case stDiscardG, stDiscardD:
		fmt.Fprintf(&sb, "%s discards %s (hand limit %d).", who, KindTitles[cards[0]], s.HandLimit(p))
	}
	if u.over {
		sb.WriteByte(' ')
		sb.WriteString(c.prompt())
	}
	return sb.String()
}

// Describe implements env.Describer.
func (s *SpielState) Describe() []env.Field { return s.S.Describe() }

// DescribeAction implements env.Describer.
func (s *SpielState) DescribeAction(a int) string { return s.S.DescribeAction(a) }
