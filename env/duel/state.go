package duel

import (
	"errors"
	"fmt"

	"github.com/davidgoliath/dgenv/env"
)

// Stages of a round, in order. The decision stages are where a player may
// be asked; draw and the round's end are automatic.
const (
	stDraw = iota
	stEventG
	stEventD
	stMoveG
	stNegateD // David may negate Goliath's pending move
	stMoveD
	stNegateG // Goliath may negate David's pending move
	stAttackG
	stDefendD
	stAttackD
	stDefendG
	stDiscardG
	stDiscardD
	stEnd
)

// Phase numbers the kinds of decision (the observation's one-hot order).
type Phase uint8

// Phases of a decision.
const (
	PhaseEvent Phase = iota
	PhaseMove
	PhaseNegate
	PhaseAttack
	PhaseDefend
	PhaseDiscard
	PhaseNone // terminal
)

var phaseNames = [...]string{"event", "move", "negate", "attack", "defend", "discard", "none"}

func (p Phase) String() string { return phaseNames[p] }

var stagePhase = [...]Phase{
	stEventG: PhaseEvent, stEventD: PhaseEvent, stMoveG: PhaseMove, stMoveD: PhaseMove,
	stNegateD: PhaseNegate, stNegateG: PhaseNegate, stAttackG: PhaseAttack, stAttackD: PhaseAttack,
	stDefendD: PhaseDefend, stDefendG: PhaseDefend, stDiscardG: PhaseDiscard, stDiscardD: PhaseDiscard,
	stDraw: PhaseNone, stEnd: PhaseNone,
}

var stagePlayer = [...]uint8{
	stEventG: Goliath, stEventD: David, stMoveG: Goliath, stMoveD: David,
	stNegateD: David, stNegateG: Goliath, stAttackG: Goliath, stAttackD: David,
	stDefendD: David, stDefendG: Goliath, stDiscardG: Goliath, stDiscardD: David,
}

// table is the whole game position as plain values, so State copies and
// compares with = and ==.
type table struct {
	pos        [NumPlayers]uint8 // figure squares
	rocks      uint64            // bit per square
	trees      uint64
	spearSq    int8 // square of the spear token on the board, -1 while Goliath holds it
	stonesHeld uint8
	stonesOn   [NumSquares]uint8 // stone tokens per square
	stonesLeft uint8             // tokens on the board

	hand     [NumPlayers][NumKinds]uint8
	handSize [NumPlayers]uint8
	deck     [DeckSize]uint8 // deck[deckLen-1] is the top card
	deckLen  uint8
	discards [NumKinds]uint8
	discLen  uint8

	wounds [NumPlayers]uint8
	round  uint8 // rounds completed
	stage  uint8
	over   bool
	winner int8 // -1: draw or not over

	// pending move (negate stages) and attack (defend stages)
	moveFrom, moveDir, moveLen uint8
	attack, attackDist         uint8
	attackKind                 uint8 // card that made the attack (sling for David)
	justOver                   bool  // the last action ended the game

	// What both players know of each hand from skipped decisions: a seat
	// whose decision was skipped held no card that would have given it a
	// choice (lacks, a kind bit set); at most wild of its cards, drawn
	// since, may be of those kinds. ResampleFromInfostate deals within it.
	lacks [NumPlayers]uint32
	wild  [NumPlayers]uint8
}

// State is a duel in progress. The zero State is not usable: get one from
// Game.NewInitialState.
type State struct {
	game *Game
	t    table
	rng  env.RNG
	seed uint64
	hist []uint8 // actions so far
	// resamples lists the ResampleFromInfostate calls that made this state
	// a sampled world rather than the seed's game (nil for a real game).
	resamples []Resample
	// chance, when set, decides the chance events (obstacles, draws,
	// disarms) instead of rng: the explicit-chance state's script
	// (chance.go). nil in play.
	chance *chanceScript
}

// Resample is one ResampleFromInfostate in a state's past: after At
// actions, Player's unseen cards were dealt anew from NewRNG(A, B).
type Resample struct {
	At     int
	Player int
	A      uint64
	B      uint64
}

// ErrIllegalAction is wrapped by every *IllegalActionError.
var ErrIllegalAction = errors.New("illegal action")

// IllegalActionError says which action was refused and what was legal.
type IllegalActionError struct {
	Player int
	Action int
	Legal  []int
}

func (e *IllegalActionError) Error() string {
	return fmt.Sprintf("illegal action %d for seat %d (legal: %v)", e.Action, e.Player, e.Legal)
}

func (e *IllegalActionError) Unwrap() error { return ErrIllegalAction }

// Reset starts a new game from seed on this state, reusing its buffers
// (no allocation): what a vectorised env does on auto-reset.
func (s *State) Reset(seed uint64) {
	s.seed = seed
	s.rng = env.NewRNG(seed, 0)
	s.hist = s.hist[:0]
	s.resamples = nil
	t := &s.t
	*t = table{spearSq: -1, winner: -1, stonesHeld: NumStones}
	t.pos = [2]uint8{uint8(Square(4, 7)), uint8(Square(3, 0))}
	// Obstacles: 4 distinct squares of ranks 2..5, rocks first (partial Fisher-Yates).
	var sq [32]uint8
	for i := range sq {
		sq[i] = uint8(2*BoardSize + i)
	}
	for i := range NumRocks + NumTrees {
		var j int
		if s.chance != nil {
			j = i + s.chance.obstacle(&s.t, i, sq[i:])
		} else {
			j = i + s.rng.IntN(len(sq)-i)
		}
		sq[i], sq[j] = sq[j], sq[i]
		if i < NumRocks {
			t.rocks |= 1 << sq[i]
		} else {
			t.trees |= 1 << sq[i]
		}
	}
	n := 0
	for k := range NumKinds {
		for range Copies[k] {
			t.deck[n] = uint8(k)
			n++
		}
	}
	t.deckLen = DeckSize
	s.shuffleDeck()
	for p := range NumPlayers {
		for range StartHand {
			s.draw(p)
		}
	}
	s.advance()
}

func (s *State) shuffleDeck() {
	if s.chance != nil {
		return // the order is the draws': each one a chance node
	}
	d := s.t.deck[:s.t.deckLen]
	for i := len(d) - 1; i > 0; i-- {
		j := s.rng.IntN(i + 1)
		d[i], d[j] = d[j], d[i]
	}
}

// draw gives player the top card, refilling an empty deck from the discards.
func (s *State) draw(p int) {
	t := &s.t
	if t.deckLen == 0 {
		if t.discLen == 0 {
			return
		}
		n := 0
		for k := range NumKinds {
			for range t.discards[k] {
				t.deck[n] = uint8(k)
				n++
			}
			t.discards[k] = 0
		}
		t.deckLen = uint8(n)
		t.discLen = 0
		s.shuffleDeck()
	}
	if s.chance != nil {
		s.chance.draw(t, p)
	}
	t.deckLen--
	k := t.deck[t.deckLen]
	t.hand[p][k]++
	t.handSize[p]++
	if t.lacks[p] != 0 {
		t.wild[p] = min(t.wild[p]+1, t.handSize[p])
	}
}

// discard moves one card of kind k from p's hand to the discard pile.
func (s *State) discard(p, k int) {
	t := &s.t
	t.hand[p][k]--
	t.handSize[p]--
	t.discards[k]++
	t.discLen++
	if t.lacks[p]&(1<<k) != 0 && t.wild[p] > 0 {
		t.wild[p]-- // it was one of the wild cards
	}
	t.wild[p] = min(t.wild[p], t.handSize[p])
}

// Game returns the game this state belongs to.
func (s *State) Game() *Game { return s.game }

// Seed is the seed the game was started from.
func (s *State) Seed() uint64 { return s.seed }

// CurrentPlayer is the seat to act, or TerminalPlayer.
func (s *State) CurrentPlayer() int {
	if s.t.over {
		return TerminalPlayer
	}
	return int(stagePlayer[s.t.stage])
}

// IsTerminal reports whether the game is over.
func (s *State) IsTerminal() bool { return s.t.over }

// Phase is the kind of decision being asked (PhaseNone once terminal).
func (s *State) Phase() Phase {
	if s.t.over {
		return PhaseNone
	}
	return stagePhase[s.t.stage]
}

// Round is the number of rounds completed.
func (s *State) Round() int { return int(s.t.round) }

// Winner is the winning seat, or -1 (game running or drawn).
func (s *State) Winner() int { return int(s.t.winner) }

// Wounds of a seat.
func (s *State) Wounds(seat int) int { return int(s.t.wounds[seat]) }

// Position is a seat's square.
func (s *State) Position(seat int) int { return int(s.t.pos[seat]) }

// Hand returns a seat's cards per kind.
func (s *State) Hand(seat int) [NumKinds]uint8 { return s.t.hand[seat] }

// HandSize counts a seat's cards.
func (s *State) HandSize(seat int) int { return int(s.t.handSize[seat]) }

// DeckSize counts the cards in the deck.
func (s *State) DeckSize() int { return int(s.t.deckLen) }

// Discards returns the discard pile per kind.
func (s *State) Discards() [NumKinds]uint8 { return s.t.discards }

// SpearSquare is the spear token's square, or -1 while Goliath holds it.
func (s *State) SpearSquare() int { return int(s.t.spearSq) }

// StonesHeld counts the stone tokens David holds.
func (s *State) StonesHeld() int { return int(s.t.stonesHeld) }

// StonesOn counts the stone tokens on square sq.
func (s *State) StonesOn(sq int) int { return int(s.t.stonesOn[sq]) }

// IsRock and IsTree report the obstacles.
func (s *State) IsRock(sq int) bool { return s.t.rocks&(1<<sq) != 0 }

// IsTree reports whether sq holds a tree.
func (s *State) IsTree(sq int) bool { return s.t.trees&(1<<sq) != 0 }

// PendingMove is the move awaiting a negate decision: from, direction, length.
func (s *State) PendingMove() (from, dir, n int) {
	return int(s.t.moveFrom), int(s.t.moveDir), int(s.t.moveLen)
}

// PendingAttack is the attack awaiting a defence: type (1..7) and distance.
func (s *State) PendingAttack() (attack, dist int) { return int(s.t.attack), int(s.t.attackDist) }

// HandLimit is 7 minus the seat's wounds.
func (s *State) HandLimit(seat int) int { return HandLimit - int(s.t.wounds[seat]) }

// moveOK reports whether a figure at from may go n squares in dir.
func (s *State) moveOK(p, from, dir, n int) bool {
	t := &s.t
	x, y := from%8, from/8
	other := uint64(1) << t.pos[1-p]
	for i := 1; i <= n; i++ {
		x += dirX[dir]
		y += dirY[dir]
		if x < 0 || x > 7 || y < 0 || y > 7 {
			return false
		}
		if (t.rocks|t.trees|other)&(1<<Square(x, y)) != 0 {
			return false
		}
	}
	return true
}

// swordOK: David is adjacent to Goliath in a direction sword kind k allows.
func (s *State) swordOK(k int) bool {
	li := lines[s.t.pos[Goliath]][s.t.pos[David]]
	if li.dir < 0 || li.dist != 1 {
		return false
	}
	diag := li.dir%2 == 1
	return diag == (k%2 == 1) // odd sword kinds are the diagonal ones
}

// sightOK: a and b on a common line with no tree strictly between; returns the distance.
func (s *State) sight(a, b uint8) (int, bool) {
	li := lines[a][b]
	if li.dir < 0 || li.between&s.t.trees != 0 {
		return 0, false
	}
	return int(li.dist), true
}

func (s *State) eventOK(p, k int) bool {
	t := &s.t
	switch k {
	case KindReinforcements:
		return true
	case KindDisarm:
		return t.handSize[1-p] > 0
	case KindRearm:
		if p == Goliath {
			return t.spearSq >= 0
		}
		return t.stonesLeft > 0
	}
	return false
}

// AppendLegalActions appends the legal actions in ascending order to dst.
func (s *State) AppendLegalActions(dst []Action) []Action {
	t := &s.t
	if t.over {
		return dst
	}
	p := int(stagePlayer[t.stage])
	h := &t.hand[p]
	switch t.stage {
	case stEventG, stEventD:
		dst = append(dst, ActPass)
		for k := KindReinforcements; k <= KindRearm; k++ {
			if h[k] > 0 && s.eventOK(p, k) {
				dst = append(dst, ActEvent+k-KindReinforcements)
			}
		}
	case stMoveG, stMoveD:
		dst = append(dst, ActPass)
		from := int(t.pos[p])
		for k := KindMoveOrth1; k <= KindMoveAny2; k++ {
			if h[k] == 0 {
				continue
			}
			for d := range 8 {
				if moveDirs[k]&(1<<d) != 0 && s.moveOK(p, from, d, moveLen[k]) {
					dst = append(dst, ActMove+8*k+d)
				}
			}
		}
	case stNegateD, stNegateG:
		dst = append(dst, ActPass)
		if h[KindNegate] > 0 {
			for k := range int(t.moveLen) {
				dst = append(dst, ActNegate+k)
			}
		}
	case stAttackG:
		dst = append(dst, ActPass)
		for k := KindThrustOrth; k <= KindChopDiag; k++ {
			if h[k] > 0 && s.swordOK(k) {
				dst = append(dst, ActSword+k-KindThrustOrth)
			}
		}
		if t.spearSq < 0 {
			if d, ok := s.sight(t.pos[Goliath], t.pos[David]); ok {
				for k := KindThrow2; k <= KindThrow4; k++ {
					if h[k] > 0 && d == k-KindThrow2+2 {
						dst = append(dst, ActThrow+k-KindThrow2)
					}
				}
			}
		}
	case stAttackD:
		dst = append(dst, ActPass)
		if t.stonesHeld == 0 {
			break
		}
		d, ok := s.sight(t.pos[David], t.pos[Goliath])
		if !ok {
			break
		}
		for k := KindSling2; k <= KindSling5; k++ {
			if h[k] == 0 || d > k-KindSling2+2 {
				continue
			}
			for st := KindStoneFast; st <= KindStoneSinker; st++ {
				if h[st] > 0 {
					dst = append(dst, ActSling+3*(k-KindSling2)+st-KindStoneFast)
				}
			}
		}
	case stDefendD, stDefendG:
		dst = append(dst, ActPass)
		for k := KindBlock; k <= KindDuck; k++ {
			if h[k] > 0 && stops[k-KindBlock][t.attack] {
				dst = append(dst, ActDefend+k-KindBlock)
			}
		}
	case stDiscardG, stDiscardD:
		for k := range NumKinds {
			if h[k] > 0 {
				dst = append(dst, ActDiscard+k)
			}
		}
	}
	return dst
}

// LegalActions lists the legal actions in ascending order (empty when terminal).
func (s *State) LegalActions() []Action {
	var buf [NumActions]Action
	return append([]Action(nil), s.AppendLegalActions(buf[:0])...)
}

// NumLegal counts the legal actions.
func (s *State) NumLegal() int {
	var buf [NumActions]Action
	return len(s.AppendLegalActions(buf[:0]))
}

// IsLegal reports whether action a is legal now.
func (s *State) IsLegal(a Action) bool {
	if a < 0 || a >= NumActions {
		return false
	}
	var buf [NumActions]Action
	for _, l := range s.AppendLegalActions(buf[:0]) {
		if l == a {
			return true
		}
	}
	return false
}

// WriteMask writes 1 at every legal action and 0 elsewhere into dst[:117].
func (s *State) WriteMask(dst []uint8) {
	d := (*[NumActions]uint8)(dst)
	*d = [NumActions]uint8{}
	var buf [NumActions]Action
	for _, a := range s.AppendLegalActions(buf[:0]) {
		d[a] = 1
	}
}

// LegalActionsMask is a 117-long mask of the legal actions.
func (s *State) LegalActionsMask() []bool {
	var m [NumActions]uint8
	s.WriteMask(m[:])
	out := make([]bool, NumActions)
	for i, v := range m {
		out[i] = v == 1
	}
	return out
}

// ApplyAction applies a for the seat to act. An illegal action returns an
// *IllegalActionError and leaves the state unchanged.
func (s *State) ApplyAction(a Action) error {
	if !s.IsLegal(a) {
		return &IllegalActionError{Player: s.CurrentPlayer(), Action: a, Legal: s.LegalActions()}
	}
	s.apply(a)
	return nil
}

// ApplyUnchecked applies an action the caller knows to be legal (taken from
// the mask or the legal list): the vectorised env's path. An illegal action
// here leaves the state undefined; on a finished game it does nothing.
func (s *State) ApplyUnchecked(a Action) { s.apply(a) }

// apply is the per-step hot path: no allocation.
func (s *State) apply(a Action) {
	t := &s.t
	if t.over {
		return // stepping a finished game is a no-op
	}
	t.justOver = false
	s.hist = append(s.hist, uint8(a))
	p := int(stagePlayer[t.stage])
	switch t.stage {
	case stEventG, stEventD:
		if a != ActPass {
			k := KindReinforcements + a - ActEvent
			s.discard(p, k)
			s.event(p, k)
		}
		t.stage++
	case stMoveG, stMoveD:
		if a == ActPass {
			t.stage += 2 // no move, no negate
			break
		}
		k := (a - ActMove) / 8
		s.discard(p, k)
		t.moveFrom, t.moveDir, t.moveLen = t.pos[p], uint8((a-ActMove)%8), uint8(moveLen[k])
		t.stage++
	case stNegateD, stNegateG:
		mover := 1 - p
		n := int(t.moveLen)
		if a != ActPass {
			s.discard(p, KindNegate)
			n = a - ActNegate
		}
		s.move(mover, n)
		t.stage++
	case stAttackG:
		if a == ActPass {
			t.stage = stAttackD
			break
		}
		var k int
		if a >= ActThrow {
			k = KindThrow2 + a - ActThrow
			t.attack = AttackThrow
		} else {
			k = KindThrustOrth + a - ActSword
			t.attack = uint8(AttackThrust + (k-KindThrustOrth)/2)
			if t.spearSq < 0 {
				t.attack = AttackThrust // a spear attack with a sword card
			}
		}
		s.discard(p, k)
		t.attackKind = uint8(k)
		t.attackDist = lines[t.pos[Goliath]][t.pos[David]].dist
		t.stage = stDefendD
	case stAttackD:
		if a == ActPass {
			t.stage = stDiscardG
			break
		}
		sling := KindSling2 + (a-ActSling)/3
		stone := KindStoneFast + (a-ActSling)%3
		s.discard(p, sling)
		s.discard(p, stone)
		t.stonesHeld--
		t.attack = uint8(AttackFast + stone - KindStoneFast)
		t.attackKind = uint8(sling)
		t.attackDist = lines[t.pos[David]][t.pos[Goliath]].dist
		t.stage = stDefendG
	case stDefendD, stDefendG:
		if a == ActPass {
			s.hit(p)
		} else {
			s.discard(p, KindBlock+a-ActDefend)
			s.stopped(p)
		}
	case stDiscardG, stDiscardD:
		s.discard(p, a-ActDiscard)
	}
	s.advance()
}

// event resolves event card k played by p.
func (s *State) event(p, k int) {
	t := &s.t
	switch k {
	case KindReinforcements:
		s.draw(p)
		s.draw(p)
	case KindDisarm:
		o := 1 - p
		if s.chance != nil {
			s.discard(o, s.chance.disarm(t, o))
			return
		}
		i := s.rng.IntN(int(t.handSize[o]))
		for c := range NumKinds {
			if i < int(t.hand[o][c]) {
				s.discard(o, c)
				return
			}
			i -= int(t.hand[o][c])
		}
	case KindRearm:
		if p == Goliath {
			t.spearSq = -1
			return
		}
		taken := 0
		for x := 0; x < BoardSize && taken < 2; x++ {
			for y := 0; y < BoardSize && taken < 2; y++ {
				sq := Square(x, y)
				for t.stonesOn[sq] > 0 && taken < 2 {
					t.stonesOn[sq]--
					t.stonesLeft--
					t.stonesHeld++
					taken++
				}
			}
		}
	}
}

// move moves p's figure n squares along the pending direction, picking up
// its own tokens on every square entered.
func (s *State) move(p, n int) {
	t := &s.t
	x, y := int(t.moveFrom%8), int(t.moveFrom/8)
	d := int(t.moveDir)
	for range n {
		x += dirX[d]
		y += dirY[d]
		sq := Square(x, y)
		if p == Goliath {
			if int(t.spearSq) == sq {
				t.spearSq = -1
			}
		} else if c := t.stonesOn[sq]; c > 0 {
			t.stonesOn[sq] = 0
			t.stonesLeft -= c
			t.stonesHeld += c
		}
	}
	t.pos[p] = uint8(Square(x, y))
	t.moveLen = 0
}

// hit wounds the defender p and ends the game at the third wound.
func (s *State) hit(p int) {
	t := &s.t
	t.wounds[p]++
	// A thrown spear that hits stays with Goliath; a stone that hits is gone.
	if t.wounds[p] >= MaxWounds {
		t.over = true
		t.justOver = true
		t.winner = int8(1 - p)
		return
	}
	s.afterAttack(p)
}

// stopped: the defender p stopped the attack with a defence card.
func (s *State) stopped(p int) {
	t := &s.t
	switch t.attack {
	case AttackThrow:
		t.spearSq = int8(t.pos[David])
	case AttackFast, AttackCurved, AttackSinker:
		t.stonesOn[t.pos[Goliath]]++
		t.stonesLeft++
	}
	s.afterAttack(p)
}

func (s *State) afterAttack(defender int) {
	t := &s.t
	t.attack, t.attackDist, t.attackKind = 0, 0, 0
	if defender == David {
		t.stage = stAttackD
	} else {
		t.stage = stDiscardG
	}
}

// advance runs the automatic steps and skips every decision whose only
// legal action is pass, until a player must decide or the game is over.
func (s *State) advance() {
	t := &s.t
	for !t.over {
		switch t.stage {
		case stDraw:
			s.draw(Goliath)
			s.draw(David)
			t.stage = stEventG
			continue
		case stEnd:
			t.round++
			if int(t.round) >= s.game.params.MaxRounds {
				t.over = true
				t.justOver = true
				return
			}
			t.stage = stDraw
			continue
		case stDiscardG, stDiscardD:
			p := int(stagePlayer[t.stage])
			if int(t.handSize[p]) > HandLimit-int(t.wounds[p]) {
				return
			}
			t.stage++
			continue
		}
		if s.hasChoice() {
			return
		}
		// Only pass: resolve it without asking. Both players see that the
		// decision was skipped, so both learn what the seat did not hold.
		s.noteSkip(int(stagePlayer[t.stage]))
		switch t.stage {
		case stEventG, stEventD:
			t.stage++
		case stMoveG, stMoveD:
			t.stage += 2
		case stNegateD, stNegateG:
			s.move(1-int(stagePlayer[t.stage]), int(t.moveLen))
			t.stage++
		case stAttackG:
			t.stage = stAttackD
		case stAttackD:
			t.stage = stDiscardG
		case stDefendD, stDefendG:
			s.hit(int(stagePlayer[t.stage]))
		}
	}
}

// noteSkip records that seat p's decision at the current stage was skipped.
func (s *State) noteSkip(p int) {
	t := &s.t
	k := s.choiceKinds(p)
	if k == 0 {
		return
	}
	if t.wild[p] == 0 {
		t.lacks[p] |= k
	} else {
		t.lacks[p], t.wild[p] = k, 0 // the older, weaker fact is dropped
	}
}

// choiceKinds is the set of kinds one card of which would have given seat p
// a choice at the current stage. A sling attack needs two cards, so a
// skipped one says nothing of any single kind: 0.
func (s *State) choiceKinds(p int) uint32 {
	t := &s.t
	var k uint32
	switch t.stage {
	case stEventG, stEventD:
		for e := KindReinforcements; e <= KindRearm; e++ {
			if s.eventOK(p, e) {
				k |= 1 << e
			}
		}
	case stMoveG, stMoveD:
		for m := KindMoveOrth1; m <= KindMoveAny2; m++ {
			for d := range 8 {
				if moveDirs[m]&(1<<d) != 0 && s.moveOK(p, int(t.pos[p]), d, moveLen[m]) {
					k |= 1 << m
					break
				}
			}
		}
	case stNegateD, stNegateG:
		k = 1 << KindNegate
	case stAttackG:
		for w := KindThrustOrth; w <= KindChopDiag; w++ {
			if s.swordOK(w) {
				k |= 1 << w
			}
		}
		if d, ok := s.sight(t.pos[Goliath], t.pos[David]); ok && t.spearSq < 0 && d >= 2 && d <= 4 {
			k |= 1 << (KindThrow2 + d - 2)
		}
	case stDefendD, stDefendG:
		for d := KindBlock; d <= KindDuck; d++ {
			if stops[d-KindBlock][t.attack] {
				k |= 1 << d
			}
		}
	}
	return k
}

// hasChoice reports whether the decision at the current stage offers more than pass.
func (s *State) hasChoice() bool {
	var buf [NumActions]Action
	return len(s.AppendLegalActions(buf[:0])) > 1
}

// Returns are +1 for the winner, -1 for the loser, 0 each for a draw or a game in progress.
func (s *State) Returns() []float64 {
	out := make([]float64, NumPlayers)
	s.WriteReturns(out)
	return out
}

// WriteReturns writes Returns into dst[:2] without allocating.
func (s *State) WriteReturns(dst []float64) {
	dst[0], dst[1] = 0, 0
	if w := s.t.winner; w >= 0 {
		dst[w] = 1
		dst[1-w] = -1
	}
}

// Rewards are each seat's reward for the last action: the returns when it
// ended the game, 0 otherwise.
func (s *State) Rewards() []float64 {
	out := make([]float64, NumPlayers)
	if s.t.justOver {
		s.WriteReturns(out)
	}
	return out
}

// Clone returns an independent copy.
func (s *State) Clone() *State {
	c := *s
	if s.hist != nil {
		c.hist = make([]uint8, len(s.hist), cap(s.hist))
		copy(c.hist, s.hist)
	}
	c.resamples = append([]Resample(nil), s.resamples...)
	return &c
}

// History lists every action so far in order.
func (s *State) History() []Action {
	h := make([]Action, len(s.hist))
	for i, a := range s.hist {
		h[i] = int(a)
	}
	return h
}

// Equal reports whether two states hold the same position, RNG and history.
func (s *State) Equal(o *State) bool {
	if s.game.params != o.game.params || s.t != o.t || s.rng != o.rng || s.seed != o.seed || len(s.hist) != len(o.hist) || len(s.resamples) != len(o.resamples) {
		return false
	}
	for i := range s.resamples {
		if s.resamples[i] != o.resamples[i] {
			return false
		}
	}
	for i := range s.hist {
		if s.hist[i] != o.hist[i] {
			return false
		}
	}
	return true
}
