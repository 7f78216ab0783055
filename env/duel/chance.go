package duel

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/davidgoliath/dgenv/env"
)

// ChanceState is the duel with OpenSpiel's semantics (env.ChanceState, for
// the pyspiel game and the C ABI's dg_state_* calls): every chance event of
// DUEL.md is a chance node of its own, and State plays everything else, the
// one definition of the rules.
//
// The chance nodes, in the order State meets them:
//   - the set-up's 4 obstacles (rocks, then trees): outcome = the square,
//     each free square of ranks 3..6 equally likely (ChanceRun: the
//     obstacles left to place);
//   - every draw (the hands, the draw phase, reinforcements): outcome = the
//     kind drawn, with probability its copies in the deck over the deck's
//     size. The deck is a multiset: its order is never drawn, so a refill
//     from the discards is no node of its own;
//   - a disarm: outcome = the kind discarded, with probability its copies in
//     the disarmed hand over the hand's size.
//
// How State is driven: a State with a chanceScript takes its chance
// outcomes from the script instead of its RNG (obstacle, draw, disarm in
// state.go). Applying a player's action (or setting up) runs State on a
// clone with the outcomes known so far; when the script runs out, the
// clone is dropped and the node it reached (with a snapshot of the table
// there) is the chance node to ask. Each outcome re-runs the action with
// one more: a few State steps per action, and no rule outside State.
type ChanceState struct {
	g       *SpielGame
	s       *State // at the last player node or the end; nil during the set-up
	spare   *State // a State whose buffers try reuses (never c.s)
	out     []uint8
	nodes   []chanceNode // the node of each outcome in out
	hist    []env.PlayerAction
	pending bool // at a chance node: sc.node, sc.snap
	op      int  // the action being resolved at a chance node (-1: the set-up)
	base    int  // outcomes in out before op
	sc      chanceScript
	rewards [NumPlayers]float64

	scratch State // for observations of a snapshot
	obsBuf  [ObsSize]uint8
}

// Kinds of chance node.
const (
	nodeObstacle = iota
	nodeDraw
	nodeDisarm
)

// chanceNode is one chance event: its kind, the seat drawing or disarmed,
// and for an obstacle its index (0, 1 rocks; 2, 3 trees).
type chanceNode struct {
	kind, seat, obstacle uint8
}

// chanceScript feeds State its chance outcomes (see ChanceState).
type chanceScript struct {
	out   []uint8
	next  int
	short bool       // State needed an outcome past out
	node  chanceNode // the first such node
	snap  table      // the table there
	free  [32]uint8  // an obstacle node's free squares
	nfree int
}

// take returns the next outcome, or notes the node where they ran out.
func (c *chanceScript) take(t *table, n chanceNode) (int, bool) {
	if c.short {
		return 0, false
	}
	if c.next < len(c.out) {
		c.next++
		return int(c.out[c.next-1]), true
	}
	c.short, c.node, c.snap = true, n, *t
	return 0, false
}

// obstacle places obstacle i: the index in free of the scripted square.
func (c *chanceScript) obstacle(t *table, i int, free []uint8) int {
	first := !c.short
	o, ok := c.take(t, chanceNode{kind: nodeObstacle, obstacle: uint8(i)})
	if !ok {
		if first {
			c.nfree = copy(c.free[:], free)
		}
		return 0
	}
	if j := indexOf(free, uint8(o)); j >= 0 {
		return j
	}
	return 0 // ApplyAction checked the outcome: not reached
}

// draw puts the scripted kind on top of the deck (t.deckLen > 0).
func (c *chanceScript) draw(t *table, p int) {
	o, ok := c.take(t, chanceNode{kind: nodeDraw, seat: uint8(p)})
	if !ok {
		return
	}
	if j := indexOf(t.deck[:t.deckLen], uint8(o)); j >= 0 {
		t.deck[j], t.deck[t.deckLen-1] = t.deck[t.deckLen-1], t.deck[j]
	}
}

// disarm is the kind seat o discards (o holds a card).
func (c *chanceScript) disarm(t *table, o int) int {
	k, ok := c.take(t, chanceNode{kind: nodeDisarm, seat: uint8(o)})
	if ok && t.hand[o][k] > 0 {
		return k
	}
	for k := range NumKinds { // the script ran out: any card, the try is dropped
		if t.hand[o][k] > 0 {
			return k
		}
	}
	return 0
}

func indexOf(s []uint8, v uint8) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// NewChanceState implements env.ChanceGame: the first obstacle's node.
func (g *SpielGame) NewChanceState() env.ChanceState { return g.newChanceState() }

func (g *SpielGame) newChanceState() *ChanceState {
	c := &ChanceState{g: g, op: -1}
	c.try()
	return c
}

// ChanceInfo implements env.ChanceGame. A round has at most 6 chance nodes
// (2 draws, and 2 events of at most 2 draws each), the set-up 4 obstacles
// and 14 cards.
func (g *SpielGame) ChanceInfo() env.ChanceInfo {
	return env.ChanceInfo{
		MaxChanceOutcomes:          NumSquares,
		MaxChanceNodes:             NumRocks + NumTrees + 2*StartHand + 6*g.G.params.MaxRounds,
		ObservationTensorSize:      ObsSize,
		InformationStateTensorSize: infoStateSize,
	}
}

// infoStateSize: the observation; what both know of each hand from skipped
// decisions, the observer's then the opponent's (the kinds it lacks, and how
// many cards drawn since may be of them: State's lacks and wild), and at a
// chance node its kind: obstacle, own draw, opponent's draw, own disarmed
// card, opponent's. The rest of the history counts only through these and
// the observation (the board, the piles, the wounds), which is what the
// rules look at.
const infoStateSize = ObsSize + 2*(NumKinds+1) + 5

// try runs op on State with the outcomes known: a player node (committed)
// or the chance node where they ran out.
func (c *ChanceState) try() {
	st := c.spare
	if st == nil {
		st = &State{game: c.g.G}
	}
	if c.op >= 0 { // a copy of c.s, reusing st's buffer
		h := st.hist[:0]
		*st = *c.s
		st.hist = append(h, c.s.hist...)
	}
	c.sc = chanceScript{out: c.out, next: c.base}
	st.chance = &c.sc
	if c.op < 0 {
		st.Reset(0)
	} else {
		st.apply(c.op)
	}
	st.chance = nil
	c.sc.out = nil
	if c.pending = c.sc.short; c.pending {
		c.spare = st
		return
	}
	c.s, c.spare = st, c.s
	if st.t.justOver {
		st.WriteReturns(c.rewards[:])
	}
}

// Game implements env.ChanceState.
func (c *ChanceState) Game() env.Game { return c.g }

// CurrentPlayer implements env.ChanceState.
func (c *ChanceState) CurrentPlayer() int {
	if c.pending {
		return env.ChancePlayer
	}
	return c.s.CurrentPlayer()
}

// IsTerminal implements env.ChanceState.
func (c *ChanceState) IsTerminal() bool { return !c.pending && c.s.IsTerminal() }

// AppendLegalActions implements env.ChanceState: at a chance node, the
// outcomes (squares or kinds) in ascending order.
func (c *ChanceState) AppendLegalActions(dst []int) []int {
	if !c.pending {
		return c.s.AppendLegalActions(dst)
	}
	var buf [NumSquares]env.ChanceOutcome
	for _, o := range c.AppendChanceOutcomes(buf[:0]) {
		dst = append(dst, o.Action)
	}
	return dst
}

// AppendChanceOutcomes implements env.ChanceState.
func (c *ChanceState) AppendChanceOutcomes(dst []env.ChanceOutcome) []env.ChanceOutcome {
	if !c.pending {
		return dst
	}
	t := &c.sc.snap
	switch c.sc.node.kind {
	case nodeObstacle:
		var free uint64 // the free squares, ascending
		for _, sq := range c.sc.free[:c.sc.nfree] {
			free |= 1 << sq
		}
		for sq := range NumSquares {
			if free&(1<<sq) != 0 {
				dst = append(dst, env.ChanceOutcome{Action: sq, Prob: 1 / float64(c.sc.nfree)})
			}
		}
	case nodeDraw:
		var n [NumKinds]int
		for _, k := range t.deck[:t.deckLen] {
			n[k]++
		}
		for k, m := range n {
			if m > 0 {
				dst = append(dst, env.ChanceOutcome{Action: k, Prob: float64(m) / float64(t.deckLen)})
			}
		}
	case nodeDisarm:
		o := c.sc.node.seat
		for k, m := range t.hand[o] {
			if m > 0 {
				dst = append(dst, env.ChanceOutcome{Action: k, Prob: float64(m) / float64(t.handSize[o])})
			}
		}
	}
	return dst
}

// ChanceRun implements env.ChanceState: at an obstacle, the obstacles left
// to place (the free squares drawn without replacement).
func (c *ChanceState) ChanceRun() int {
	if !c.pending || c.sc.node.kind != nodeObstacle {
		return 0
	}
	return NumRocks + NumTrees - int(c.sc.node.obstacle)
}

// ApplyAction implements env.ChanceState.
func (c *ChanceState) ApplyAction(a int) error {
	if c.pending {
		var buf [NumSquares]env.ChanceOutcome
		ok := false
		for _, o := range c.AppendChanceOutcomes(buf[:0]) {
			ok = ok || o.Action == a
		}
		if !ok {
			return &env.IllegalActionError{Env: -1, Player: env.ChancePlayer, Action: a, Legal: c.AppendLegalActions(nil)}
		}
		c.out = append(c.out, uint8(a))
		c.nodes = append(c.nodes, c.sc.node)
		c.hist = append(c.hist, env.PlayerAction{Player: env.ChancePlayer, Action: a})
		c.try()
		return nil
	}
	p := c.s.CurrentPlayer()
	if !c.s.IsLegal(a) {
		return &env.IllegalActionError{Env: -1, Player: p, Action: a, Legal: c.AppendLegalActions(nil)}
	}
	c.hist = append(c.hist, env.PlayerAction{Player: p, Action: a})
	c.rewards = [NumPlayers]float64{}
	c.op, c.base = a, len(c.out)
	c.try()
	return nil
}

// ActionString implements env.ChanceState: State's names for actions,
// "rock c4", "tree e5" or "draw negate" for outcomes.
func (c *ChanceState) ActionString(player, a int) string {
	if player != env.ChancePlayer {
		return ActionName(a)
	}
	switch {
	case c.pending && c.sc.node.kind == nodeObstacle && a >= 0 && a < NumSquares:
		if c.sc.node.obstacle < NumRocks {
			return "rock " + SquareName(a)
		}
		return "tree " + SquareName(a)
	case a >= 0 && a < NumKinds:
		return "card " + KindNames[a]
	}
	return "outcome " + strconv.Itoa(a)
}

// WriteReturns implements env.ChanceState.
func (c *ChanceState) WriteReturns(dst []float64) {
	if c.s == nil {
		dst[0], dst[1] = 0, 0
		return
	}
	c.s.WriteReturns(dst)
}

// WriteRewards implements env.ChanceState: the returns when the game ends.
func (c *ChanceState) WriteRewards(dst []float64) { copy(dst, c.rewards[:]) }

// view is the table as it stands: the snapshot at a chance node.
func (c *ChanceState) view() *State {
	c.scratch.game = c.g.G
	if c.pending {
		c.scratch.t = c.sc.snap
	} else {
		c.scratch.t = c.s.t
	}
	return &c.scratch
}

// ObservationTensor implements env.ChanceState: State's observation
// (WriteObservation) as float32, at a chance node of the table there.
func (c *ChanceState) ObservationTensor(player int, dst []float32) {
	c.view().WriteObservation(c.obsBuf[:], player)
	for i, v := range c.obsBuf {
		dst[i] = float32(v)
	}
}

// InformationStateTensor implements env.ChanceState (see infoStateSize).
func (c *ChanceState) InformationStateTensor(player int, dst []float32) {
	c.ObservationTensor(player, dst)
	rest := dst[ObsSize:infoStateSize]
	clear(rest)
	t := &c.view().t
	for i, seat := range [2]int{player, 1 - player} {
		sec := rest[i*(NumKinds+1) : (i+1)*(NumKinds+1)]
		for k := range NumKinds {
			if t.lacks[seat]&(1<<k) != 0 {
				sec[k] = 1
			}
		}
		sec[NumKinds] = float32(t.wild[seat])
	}
	if c.pending {
		n := c.sc.node
		slot := 0
		switch {
		case n.kind == nodeDraw:
			slot = 1 + boolInt(int(n.seat) != player)
		case n.kind == nodeDisarm:
			slot = 3 + boolInt(int(n.seat) != player)
		}
		rest[2*(NumKinds+1)+slot] = 1
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// nodeString says what a chance node or the decision asks.
func (c *ChanceState) nodeString() string {
	if !c.pending {
		s := c.s
		switch {
		case s.IsTerminal() && s.Winner() >= 0:
			return "game over: " + SeatName(s.Winner()) + " wins"
		case s.IsTerminal():
			return "game over: draw"
		}
		return SeatName(s.CurrentPlayer()) + " to " + s.Phase().String()
	}
	n := c.sc.node
	switch n.kind {
	case nodeObstacle:
		return fmt.Sprintf("chance: obstacle %d/%d", n.obstacle+1, NumRocks+NumTrees)
	case nodeDraw:
		return "chance: " + SeatName(int(n.seat)) + " draws"
	}
	return "chance: " + SeatName(int(n.seat)) + " is disarmed"
}

// ObservationString implements env.ChanceState: what player sees now.
func (c *ChanceState) ObservationString(player int) string {
	s := c.view()
	t := &s.t
	o := 1 - player
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s sees: round %d/%d, %s\n", SeatName(player), t.round+1, c.g.G.params.MaxRounds, c.nodeString())
	s.writeBoard(&sb)
	fmt.Fprintf(&sb, "own wounds %d hand %s\n", t.wounds[player], handString(&t.hand[player]))
	fmt.Fprintf(&sb, "%s wounds %d, %d cards\n", SeatName(o), t.wounds[o], t.handSize[o])
	spear := "held"
	if t.spearSq >= 0 {
		spear = "on " + SquareName(int(t.spearSq))
	}
	fmt.Fprintf(&sb, "spear %s, David holds %d stones\ndeck %d discards %s\n", spear, t.stonesHeld, t.deckLen, handString(&t.discards))
	if !t.over && !c.pending {
		switch t.stage {
		case stNegateD, stNegateG:
			fmt.Fprintf(&sb, "pending move: %d %s from %s\n", t.moveLen, DirNames[t.moveDir], SquareName(int(t.moveFrom)))
		case stDefendD, stDefendG:
			fmt.Fprintf(&sb, "pending attack: %s at distance %d\n", AttackNames[t.attack], t.attackDist)
		}
	}
	return sb.String()
}

// InformationStateString implements env.ChanceState: every event player
// has seen, in order (the opponent's draws as "draws a card"), then the
// observation.
func (c *ChanceState) InformationStateString(player int) string {
	var sb strings.Builder
	k := 0
	for _, pa := range c.hist {
		if pa.Player >= 0 {
			fmt.Fprintf(&sb, "%s: %s; ", SeatName(pa.Player), ActionName(pa.Action))
			continue
		}
		n := c.nodes[k]
		k++
		switch {
		case n.kind == nodeObstacle && n.obstacle < NumRocks:
			fmt.Fprintf(&sb, "rock %s; ", SquareName(pa.Action))
		case n.kind == nodeObstacle:
			fmt.Fprintf(&sb, "tree %s; ", SquareName(pa.Action))
		case n.kind == nodeDraw && int(n.seat) == player:
			fmt.Fprintf(&sb, "draw %s; ", KindNames[pa.Action])
		case n.kind == nodeDraw:
			fmt.Fprintf(&sb, "%s draws; ", SeatName(int(n.seat)))
		default:
			fmt.Fprintf(&sb, "%s disarmed of %s; ", SeatName(int(n.seat)), KindNames[pa.Action])
		}
	}
	sb.WriteString("\n")
	sb.WriteString(c.ObservationString(player))
	return sb.String()
}

// String shows the whole state (both hands): OpenSpiel's ToString.
func (c *ChanceState) String() string {
	if !c.pending {
		return c.s.String()
	}
	return c.nodeString() + "\n" + c.view().String()
}

// AppendHistory implements env.ChanceState.
func (c *ChanceState) AppendHistory(dst []env.PlayerAction) []env.PlayerAction {
	return append(dst, c.hist...)
}

// Clone implements env.ChanceState.
func (c *ChanceState) Clone() env.ChanceState { return c.clone() }

func (c *ChanceState) clone() *ChanceState {
	d := &ChanceState{g: c.g, pending: c.pending, op: c.op, base: c.base, sc: c.sc, rewards: c.rewards,
		out: append([]uint8(nil), c.out...), nodes: append([]chanceNode(nil), c.nodes...),
		hist: append([]env.PlayerAction(nil), c.hist...)}
	if c.s != nil {
		d.s = c.s.Clone()
	}
	return d
}

// chanceHeader opens ChanceState's text.
const chanceHeader = "duel-spiel v1"

// Serialize implements env.ChanceState: the parameters and every action,
// chance outcomes included (replaying them is the state).
//
//	duel-spiel v1
//	params 100              max_rounds
//	actions 19 44 30 21 ... every outcome and action, in order
func (c *ChanceState) Serialize() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s\nparams %d\nactions", chanceHeader, c.g.G.params.MaxRounds)
	for _, pa := range c.hist {
		sb.WriteByte(' ')
		sb.WriteString(strconv.Itoa(pa.Action))
	}
	sb.WriteByte('\n')
	return sb.String()
}

// DeserializeChanceState implements env.ChanceGame: it replays the
// actions, checking each.
func (g *SpielGame) DeserializeChanceState(text string) (env.ChanceState, error) {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) != 3 || strings.TrimSpace(lines[0]) != chanceHeader {
		return nil, fmt.Errorf("%w: want %q, a params line and an actions line", ErrBadSerialization, chanceHeader)
	}
	if f := strings.Fields(lines[1]); len(f) != 2 || f[0] != "params" || f[1] != strconv.Itoa(g.G.params.MaxRounds) {
		return nil, fmt.Errorf("%w: params line %q: want \"params %d\" (max_rounds of this game)", ErrBadSerialization, lines[1], g.G.params.MaxRounds)
	}
	body, ok := strings.CutPrefix(strings.TrimSpace(lines[2]), "actions")
	if !ok {
		return nil, fmt.Errorf("%w: want an actions line", ErrBadSerialization)
	}
	c := g.newChanceState()
	for i, f := range strings.Fields(body) {
		a, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%w: action %d: %q is not a number", ErrBadSerialization, i, f)
		}
		if err := c.ApplyAction(a); err != nil {
			return nil, fmt.Errorf("%w: action %d: %v", ErrBadSerialization, i, err)
		}
	}
	return c, nil
}

// resampleStream is the stream of ResampleFromInfostate's draws.
const resampleStream = 0x5e5b

// ResampleFromInfostate's search bounds: the hands it deals, and the
// outcomes it tries in all for a hand of resample.go's and for draws from
// the deck.
const (
	resampleHands = 8
	resampleSteps = 32
	resampleFree  = 256
)

// ResampleFromInfostate implements env.ChanceState. The draws that gave
// the opponent the cards it holds now (for each kind, its last draws of
// that kind; the others it has played since, so player saw them) are drawn
// again while the history is replayed through State, which checks every
// draw and decision: first from a hand dealt by State's resample
// (resample.go: from the cards player has not seen, within what skipped
// decisions revealed), each draw among that hand's kinds the deck holds
// then; failing that, each from the deck as it stands then (by copies: the
// chance node's own odds). Where the world so far would have shown player
// something else (a draw the deck cannot give, a decision asked that was
// skipped), the search steps back to the last such draw and tries another
// kind. A world found is one player cannot tell from this one, reached by
// a history of its own. If none is found within resampleHands hands and
// the bounds on outcomes tried, the true world is kept, as resample.go
// does (about 1 call in 20 over whole random games, TestResampleDealsTheOpponentsHandAnew).
func (c *ChanceState) ResampleFromInfostate(player int, seed uint64) (env.ChanceState, error) {
	if player < 0 || player >= NumPlayers {
		return nil, fmt.Errorf("player %d: not a seat of a game of %d", player, NumPlayers)
	}
	if c.IsTerminal() {
		return c.clone(), nil
	}
	o := 1 - player
	now := c.view().t
	need := now.hand[o]
	held := make([]bool, len(c.out)) // the draws o holds now
	for j := len(c.out) - 1; j >= 0; j-- {
		if n, k := c.nodes[j], c.out[j]; n.kind == nodeDraw && int(n.seat) == o && need[k] > 0 {
			need[k]--
			held[j] = true
		}
	}
	w := &world{c: c, player: player, held: held, rng: env.NewRNG(seed, resampleStream)}
	w.want = c.InformationStateString(player)
	c.InformationStateTensor(player, w.wantT[:])
	// The history up to the first held draw is kept: replay it once.
	w.start = c.g.newChanceState()
	for w.i0 < len(c.hist) {
		pa := c.hist[w.i0]
		if pa.Player < 0 && held[w.k0] {
			break
		}
		if err := w.start.ApplyAction(pa.Action); err != nil {
			return nil, fmt.Errorf("replaying the history: %w", err) // not reached
		}
		if pa.Player < 0 {
			w.k0++
		}
		w.i0++
	}
	for range resampleHands {
		st := State{game: c.g.G, t: now}
		if c.pending {
			st.t.stage = stDiscardG // no decision of o's is being asked
		}
		st.resample(Resample{Player: player, A: w.rng.Uint64(), B: w.rng.Uint64()})
		if r := w.search(st.t.hand[o], false, resampleSteps); r != nil {
			return r, nil
		}
		if r := w.search(st.t.hand[o], true, resampleFree); r != nil {
			return r, nil
		}
	}
	return c.clone(), nil
}

// world is ResampleFromInfostate's search for a history.
type world struct {
	c      *ChanceState
	player int
	held   []bool
	rng    env.RNG
	want   string
	wantT  [infoStateSize]float32
	start  *ChanceState // the history before the first held draw
	i0, k0 int          // its actions and outcomes
}

// checkpoint is the search at a held draw: the state before it, where in
// the history, the new hand's kinds left, and the kinds tried there.
type checkpoint struct {
	r     *ChanceState
	i, k  int
	rem   [NumKinds]uint8
	tried uint32
	free  bool
}

// search replays the history with the held draws dealt from hand; nil if
// no world is found within resampleSteps outcomes.
func (w *world) search(hand [NumKinds]uint8, free bool, steps int) *ChanceState {
	hist, out := w.c.hist, w.c.out
	r := w.start.clone()
	i, k, rem := w.i0, w.k0, hand
	var stack []checkpoint
	// back resumes at the latest checkpoint with a kind not tried there.
	back := func() bool {
		for len(stack) > 0 && steps > 0 {
			steps--
			cp := &stack[len(stack)-1]
			kind := w.choose(cp)
			if kind < 0 {
				stack = stack[:len(stack)-1]
				continue
			}
			cp.tried |= 1 << kind
			r, i, k, rem = cp.r.clone(), cp.i+1, cp.k+1, cp.rem
			if !cp.free {
				rem[kind]--
			}
			if r.ApplyAction(kind) == nil {
				return true
			}
		}
		return false
	}
	for {
		if i == len(hist) {
			var got [infoStateSize]float32
			if r.CurrentPlayer() == w.c.CurrentPlayer() && r.InformationStateString(w.player) == w.want {
				if r.InformationStateTensor(w.player, got[:]); got == w.wantT {
					return r
				}
			}
			if !back() {
				return nil
			}
			continue
		}
		pa := hist[i]
		if pa.Player < 0 && w.held[k] {
			stack = append(stack, checkpoint{r: r.clone(), i: i, k: k, rem: rem, free: free})
			if !back() {
				return nil
			}
			continue
		}
		a := pa.Action
		if pa.Player < 0 {
			a = int(out[k])
		}
		if r.CurrentPlayer() != pa.Player || r.ApplyAction(a) != nil {
			if !back() {
				return nil
			}
			continue
		}
		if pa.Player < 0 {
			k++
		}
		i++
	}
}

// choose draws a kind for the held draw at cp: one of the hand's kinds
// left that the deck holds and cp has not tried, by copies in the hand
// times copies in the deck (free: any kind, by copies in the deck); -1 if none.
func (w *world) choose(cp *checkpoint) int {
	var deck [NumKinds]int
	snap := &cp.r.sc.snap
	for _, k := range snap.deck[:snap.deckLen] {
		deck[k]++
	}
	if cp.free {
		cp.rem = [NumKinds]uint8{}
		for k := range cp.rem {
			cp.rem[k] = 1
		}
	}
	n := 0
	for k, m := range cp.rem {
		if cp.tried&(1<<k) == 0 {
			n += int(m) * deck[k]
		}
	}
	if n == 0 {
		return -1
	}
	x := w.rng.IntN(n)
	for k, m := range cp.rem {
		if cp.tried&(1<<k) != 0 {
			continue
		}
		if x < int(m)*deck[k] {
			return k
		}
		x -= int(m) * deck[k]
	}
	return -1
}
