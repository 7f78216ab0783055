package main

import (
	"bufio"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
)

// spielState is one game with OpenSpiel's semantics, for the pyspiel game:
// every deal is dealt by chance nodes, one card at a time (card j of a deal
// goes to the seat j+1 places left of the dealer, as at a table), and then
// played by card.State, the one definition of the rules.
//
// Notes on this implementation:
//   - Chance outcomes are the card ids not yet dealt in this deal, each with
//     the same probability. Actions of players are card ids too (0..89).
//   - card.State deals from its own RNG; here the deals come from the chance
//     nodes, so when a deal is complete the state is rebuilt from the deals
//     so far (card.Game.NewStateFromDeals) and the plays are replayed: a few
//     microseconds once per deal, and the rules stay in env alone.
//   - While a deal is being dealt, card.State already sits at that deal with
//     hands of its own RNG: they are never shown. Observations then come
//     from a copy of its table with the hands dealt so far.
type spielState struct {
	mu   sync.Mutex
	g    *card.Game
	prm  card.Params
	s    *card.State // nil until the first deal is complete
	hist []int32     // every action so far (chance and plays), in order
	who  []int8      // the player of each action: -1 for chance

	dealing  bool
	deal     int                          // index of the deal in progress (dealing or playing)
	dealt    [card.MaxPlayers][]card.Card // this deal's cards by seat, as dealt
	ndealt   int                          // cards dealt in this deal
	undealt  [card.NumActions]bool        // cards of the deck not dealt yet in this deal
	deals    []card.Hands                 // every complete deal
	plays    []card.Play                  // plays of the deal in progress
	rewards  [card.MaxPlayers]float64     // of the last action
	scratchB card.Board
	scratchO []uint8
}

// Chance and terminal player ids (OpenSpiel's kChancePlayerId, kTerminalPlayerId).
const (
	chancePlayer   = -1
	terminalPlayer = env.TerminalPlayer
)

// Tensor kinds of spielTensor.
const (
	kindObservation = 0
	kindInfoState   = 1
)

func newSpielState(p card.Params) (*spielState, error) {
	g, err := card.NewGame(p)
	if err != nil {
		return nil, err
	}
	st := &spielState{g: g, prm: g.Params()}
	st.startDealing()
	return st, nil
}

func (st *spielState) players() int { return st.prm.Players }

func (st *spielState) dealer() int { return (st.prm.FirstDealer + st.deal) % st.prm.Players }

func (st *spielState) startDealing() {
	st.dealing = true
	st.ndealt = 0
	st.plays = st.plays[:0]
	for s := range st.dealt {
		st.dealt[s] = st.dealt[s][:0]
	}
	clear(st.undealt[:])
	for c := range card.NumActions {
		st.undealt[c] = card.InDeck(card.Card(c), st.prm.Players)
	}
}

func (st *spielState) terminal() bool { return !st.dealing && st.s != nil && st.s.IsTerminal() }

func (st *spielState) currentPlayer() int {
	switch {
	case st.dealing:
		return chancePlayer
	case st.s.IsTerminal():
		return terminalPlayer
	}
	return st.s.CurrentPlayer()
}

// legal appends the legal actions (chance outcomes at a chance node) in
// ascending order.
func (st *spielState) legal(dst []int32) []int32 {
	if st.dealing {
		for c, ok := range st.undealt {
			if ok {
				dst = append(dst, int32(c))
			}
		}
		return dst
	}
	var buf [card.HandSize]card.Action
	for _, a := range st.s.AppendLegalActions(buf[:0]) {
		dst = append(dst, int32(a))
	}
	return dst
}

// apply plays action a. Rewards are those since the last player's action
// (OpenSpiel's convention): chance nodes keep the points of the deal that
// just ended until the next player acts.
func (st *spielState) apply(a int) error {
	if st.dealing {
		if a < 0 || a >= card.NumActions || !st.undealt[a] {
			return &card.IllegalActionError{Env: -1, Player: chancePlayer, Action: a, Legal: toInts(st.legal(nil))}
		}
		p := st.players()
		seat := (st.dealer() + 1 + st.ndealt) % p
		st.dealt[seat] = append(st.dealt[seat], card.Card(a))
		st.undealt[a] = false
		st.ndealt++
		st.hist = append(st.hist, int32(a))
		st.who = append(st.who, chancePlayer)
		if st.ndealt == p*card.HandSize {
			if err := st.finishDealing(); err != nil {
				return err
			}
		}
		return nil
	}
	if st.s.IsTerminal() {
		return &card.IllegalActionError{Env: -1, Player: terminalPlayer, Action: a}
	}
	seat := st.s.CurrentPlayer()
	if err := st.s.ApplyAction(a); err != nil {
		return err
	}
	clear(st.rewards[:])
	st.hist = append(st.hist, int32(a))
	st.who = append(st.who, int8(seat))
	st.plays = append(st.plays, card.Play{Seat: uint8(seat), Card: card.Card(a)})
	if r := st.s.Rewards(); len(st.plays) == st.players()*card.TricksPerDeal {
		copy(st.rewards[:], r)
		if !st.s.IsTerminal() {
			st.deal++
			st.startDealing()
		}
	}
	return nil
}

// finishDealing rebuilds the card.State from every deal so far and replays
// the plays of the earlier deals.
func (st *spielState) finishDealing() error {
	p := st.players()
	h := make(card.Hands, p)
	for s := range p {
		h[s] = slices.Clone(st.dealt[s])
	}
	st.deals = append(st.deals, h)
	s, err := st.g.NewStateFromDeals(0, st.deals...)
	if err != nil {
		return fmt.Errorf("deal %d: %w", st.deal, err)
	}
	for i, a := range st.hist {
		if st.who[i] >= 0 {
			if err := s.ApplyAction(int(a)); err != nil {
				return err
			}
		}
	}
	st.s = s
	st.dealing = false
	return nil
}

func toInts(a []int32) []int {
	out := make([]int, len(a))
	for i, v := range a {
		out[i] = int(v)
	}
	return out
}

func (st *spielState) clone() *spielState {
	c := &spielState{g: st.g, prm: st.prm, dealing: st.dealing, deal: st.deal, ndealt: st.ndealt,
		undealt: st.undealt, rewards: st.rewards}
	if st.s != nil {
		c.s = st.s.Clone()
	}
	c.hist = slices.Clone(st.hist)
	c.who = slices.Clone(st.who)
	for s := range st.dealt {
		c.dealt[s] = slices.Clone(st.dealt[s])
	}
	c.deals = slices.Clone(st.deals) // complete deals are never modified
	c.plays = slices.Clone(st.plays)
	return c
}

// board is the table as the player sees it: card.State's, or while a deal is
// being dealt, the table before that deal with the hands dealt so far.
func (st *spielState) board() *card.Board {
	if !st.dealing {
		return st.s.Board()
	}
	b := &st.scratchB
	if st.s != nil {
		*b = *st.s.Board() // already at this deal: prizes, voids and trick cleared
	} else {
		*b = card.Board{Players: uint8(st.players()), Deals: uint8(st.prm.Deals)}
	}
	b.Leader = uint8((st.dealer() + 1) % st.players())
	b.TrickLen, b.TricksDone = 0, 0
	b.Hands = [card.MaxPlayers][card.NumColours]uint32{}
	for s := range st.players() {
		for _, c := range st.dealt[s] {
			b.Hands[s][c/card.MaxValue] |= 1 << (c % card.MaxValue)
		}
	}
	return b
}

// tensorSize is the size of a tensor kind for this game.
func tensorSize(g *card.Game, kind int) int {
	l := g.ObservationLayout()
	if kind == kindInfoState {
		// The observation, then for every card of this deal's plays the trick
		// it was played in (one-hot of 15) and who played it (one-hot of P,
		// seats counted clockwise from the observer): with the rules, the
		// whole play sequence of the deal. Earlier deals count only through
		// the totals, which are all that matters of them for the rest.
		return l.Size + card.NumActions*(card.TricksPerDeal+g.NumPlayers())
	}
	return l.Size
}

// tensor writes a tensor of player as float32.
func (st *spielState) tensor(player, kind int, dst []float32) {
	l := st.g.ObservationLayout()
	if cap(st.scratchO) < l.Size {
		st.scratchO = make([]uint8, l.Size)
	}
	o := st.scratchO[:l.Size]
	l.Encode(o, st.board(), player)
	for i, v := range o {
		dst[i] = float32(v)
	}
	if kind != kindInfoState {
		return
	}
	p := st.players()
	hist := dst[l.Size:tensorSize(st.g, kind)]
	clear(hist)
	trick := hist[:card.NumActions*card.TricksPerDeal]
	seats := hist[card.NumActions*card.TricksPerDeal:]
	for i, pl := range st.plays {
		c := int(pl.Card)
		trick[c*card.TricksPerDeal+i/p] = 1
		seats[c*p+(int(pl.Seat)-player+p)%p] = 1
	}
}

func cardList(cs []card.Card) string {
	if len(cs) == 0 {
		return "-"
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = card.CardString(c)
	}
	return strings.Join(parts, ", ")
}

func bitCards(m *[card.NumColours]uint32) []card.Card {
	var out []card.Card
	for c := range card.NumColours {
		for v := range card.MaxValue {
			if m[c]&(1<<v) != 0 {
				out = append(out, card.CardID(c, v+1))
			}
		}
	}
	return out
}

// observationString is what player sees now, in words.
func (st *spielState) observationString(player int) string {
	b := st.board()
	p := st.players()
	var sb strings.Builder
	fmt.Fprintf(&sb, "player %d deal %d/%d dealer %d", player, st.deal+1, st.prm.Deals, st.dealer())
	switch {
	case st.dealing:
		fmt.Fprintf(&sb, " dealing (%d/%d cards)\n", st.ndealt, p*card.HandSize)
	case st.terminal():
		sb.WriteString(" game over\n")
	default:
		fmt.Fprintf(&sb, " trick %d/%d seat %d to play\n", b.TricksDone+1, card.TricksPerDeal, st.currentPlayer())
	}
	fmt.Fprintf(&sb, "hand: %s\ntrick led by %d:", cardList(bitCards(&b.Hands[player])), b.Leader)
	for i := range int(b.TrickLen) {
		fmt.Fprintf(&sb, " %d:%s", (int(b.Leader)+i)%p, card.CardString(b.Trick[i]))
	}
	sb.WriteString("\n")
	for s := range p {
		fmt.Fprintf(&sb, "seat %d total %d cards %d prizes %s\n", s, b.Totals[s], popcount5(&b.Hands[s]), cardList(bitCards(&b.Prizes[s])))
	}
	return sb.String()
}

func popcount5(m *[card.NumColours]uint32) int {
	n := 0
	for _, x := range m {
		for ; x != 0; x &= x - 1 {
			n++
		}
	}
	return n
}

// infoStateString is everything player has seen: its own cards as dealt and
// every play of every deal, in order.
func (st *spielState) infoStateString(player int) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "player %d", player)
	p := st.players()
	k, inDeal := -1, 0
	var mine []card.Card
	for i, a := range st.hist {
		if st.who[i] < 0 {
			if i == 0 || st.who[i-1] >= 0 { // a new deal
				k++
				inDeal = 0
				mine = mine[:0]
			}
			if (st.prm.FirstDealer+k+1+inDeal)%p == player {
				mine = append(mine, card.Card(a))
			}
			inDeal++
			continue
		}
		if st.who[i-1] < 0 {
			fmt.Fprintf(&sb, "\ndeal %d dealt: %s\nplays:", k, cardList(mine))
		}
		fmt.Fprintf(&sb, " %d:%s", st.who[i], card.CardString(card.Card(a)))
	}
	if n := len(st.hist); n > 0 && st.who[n-1] < 0 {
		fmt.Fprintf(&sb, "\ndeal %d dealing: %s", k, cardList(mine))
	}
	return sb.String()
}

// String shows the whole state (every hand): OpenSpiel's ToString.
func (st *spielState) String() string {
	if !st.dealing {
		return st.s.String()
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "deal %d/%d dealer %d dealing (%d/%d cards)\n", st.deal+1, st.prm.Deals, st.dealer(), st.ndealt, st.players()*card.HandSize)
	b := st.board()
	for s := range st.players() {
		fmt.Fprintf(&sb, "seat %d total %d hand: %s\n", s, b.Totals[s], cardList(st.dealt[s]))
	}
	return sb.String()
}

func (st *spielState) returns(dst []float64) {
	if st.s == nil {
		clear(dst[:st.players()])
		return
	}
	for i, v := range st.s.Returns() {
		dst[i] = v
	}
}

const spielHeader = "david-goliath-spiel v1"

// serialize writes the parameters and every action: replaying them is the state.
func (st *spielState) serialize() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s\nparams %d %d %d\nactions", spielHeader, st.prm.Players, st.prm.Deals, st.prm.FirstDealer)
	for _, a := range st.hist {
		sb.WriteByte(' ')
		sb.WriteString(strconv.Itoa(int(a)))
	}
	sb.WriteByte('\n')
	return sb.String()
}

func deserializeSpiel(p card.Params, text string) (*spielState, error) {
	st, err := newSpielState(p)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 4096), 1<<20)
	var lines []string
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) != 3 || lines[0] != spielHeader {
		return nil, fmt.Errorf("%w: want %q, a params line and an actions line", card.ErrBadSerialization, spielHeader)
	}
	var q card.Params
	if n, err := fmt.Sscanf(lines[1], "params %d %d %d", &q.Players, &q.Deals, &q.FirstDealer); n != 3 || err != nil {
		return nil, fmt.Errorf("%w: want \"params <players> <deals> <first_dealer>\"", card.ErrBadSerialization)
	}
	if q != st.prm {
		return nil, fmt.Errorf("%w: parameters %+v are not this game's %+v", card.ErrBadSerialization, q, st.prm)
	}
	body, ok := strings.CutPrefix(lines[2], "actions")
	if !ok {
		return nil, fmt.Errorf("%w: want an actions line", card.ErrBadSerialization)
	}
	for i, f := range strings.Fields(body) {
		a, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%w: action %d: %q is not a number", card.ErrBadSerialization, i, f)
		}
		if err := st.apply(a); err != nil {
			return nil, fmt.Errorf("%w: action %d: %v", card.ErrBadSerialization, i, err)
		}
	}
	return st, nil
}

// resample returns a state player cannot tell from this one, with the cards
// player has not seen dealt anew at random (consistently with every card
// played and every colour a seat has shown to be out of), built by
// replaying a history: so its history and chance nodes are those of the
// resampled world. Earlier deals are public once played out, and deals to
// come are chance nodes still, so only the deal in progress changes.
func (st *spielState) resample(player int, seed uint64) (*spielState, error) {
	if st.terminal() {
		return st.clone(), nil
	}
	p := st.players()
	rng := env.NewRNG(seed, 0x5e5a)
	var hands [card.MaxPlayers][]card.Card // the resampled deal in progress, as dealt
	if st.dealing {
		// Every card player has not been dealt (the others' so far and the
		// undealt ones: which is which is hidden from player too), shuffled,
		// and the others' counts dealt back from it.
		var pool []card.Card
		for s := range p {
			if s != player {
				pool = append(pool, st.dealt[s]...)
			}
		}
		for c, ok := range st.undealt {
			if ok {
				pool = append(pool, card.Card(c))
			}
		}
		for i := len(pool) - 1; i > 0; i-- {
			j := rng.IntN(i + 1)
			pool[i], pool[j] = pool[j], pool[i]
		}
		for s := range p {
			if s == player {
				hands[s] = slices.Clone(st.dealt[s])
				continue
			}
			hands[s] = slices.Clone(pool[:len(st.dealt[s])])
			pool = pool[len(st.dealt[s]):]
		}
	} else {
		r := st.s.ResampleFromInfostate(player, &rng).Record()
		d := r.Deals[len(r.Deals)-1]
		for s := range p {
			hands[s] = slices.Clone(d.Hands[s][:])
			if s == player {
				hands[s] = slices.Clone(st.deals[len(st.deals)-1][s])
			}
		}
	}
	// The history: everything before this deal's first chance node, then
	// this deal dealt from hands (card j to the seat j+1 left of the
	// dealer, each seat's cards in their order), then this deal's plays.
	start := len(st.hist) - len(st.plays) - st.ndealtTotal()
	out, err := newSpielState(st.prm)
	if err != nil {
		return nil, err
	}
	for _, a := range st.hist[:start] {
		if err := out.apply(int(a)); err != nil {
			return nil, err
		}
	}
	next := [card.MaxPlayers]int{}
	for j := range st.ndealtTotal() {
		seat := (st.dealer() + 1 + j) % p
		if err := out.apply(int(hands[seat][next[seat]])); err != nil {
			return nil, fmt.Errorf("resampled deal: %w", err)
		}
		next[seat]++
	}
	for _, pl := range st.plays {
		if err := out.apply(int(pl.Card)); err != nil {
			return nil, fmt.Errorf("resampled play: %w", err)
		}
	}
	return out, nil
}

// ndealtTotal counts the chance nodes of the deal in progress so far.
func (st *spielState) ndealtTotal() int {
	if st.dealing {
		return st.ndealt
	}
	return st.players() * card.HandSize
}

// rollout plays n random games to the end from a copy of st (chance
// outcomes and actions uniformly at random) and adds their returns to sum.
func (st *spielState) rollout(n int, seed uint64, sum []float64) {
	rng := env.NewRNG(seed, 0x0110)
	var buf [card.NumActions]int32
	ret := make([]float64, st.players())
	for range n {
		c := st.clone()
		for !c.terminal() {
			legal := c.legal(buf[:0])
			if err := c.apply(int(legal[rng.IntN(len(legal))])); err != nil {
				panic(err) // a legal action was refused: a bug
			}
		}
		c.returns(ret)
		for i, v := range ret {
			sum[i] += v
		}
	}
}

// statusLen is the length of a status array: current player, terminal (0
// or 1), the number of legal actions, then the legal actions.
const statusLen = 3 + card.NumActions

// statusView is the caller's status buffer (int32 [statusLen]), or why not.
func statusView(p unsafe.Pointer, nbytes int64) ([]int32, *env.Error) {
	s, e := view[int32]("status", p, nbytes)
	if e == nil && len(s) < statusLen {
		e = env.FieldError("status", "status: %d elements, want %d (int32: player, terminal, count, legal actions)", len(s), statusLen)
	}
	return s, e
}

// writeStatus writes the status into s (len >= statusLen).
func (st *spielState) writeStatus(s []int32) {
	s = s[:statusLen]
	s[0] = int32(st.currentPlayer())
	s[1] = 0
	if st.terminal() {
		s[1] = 1
	}
	n := len(st.legal(s[3:3]))
	s[2] = int32(n)
}

// spielSizes writes the observation and information-state tensor sizes,
// the longest game and the largest utility of a game of p into out (len >= 4).
func spielSizes(p card.Params, out []int64) error {
	if len(out) < 4 {
		return fmt.Errorf("sizes: %d elements, want 4", len(out))
	}
	g, err := card.NewGame(p)
	if err != nil {
		return err
	}
	out[0] = int64(tensorSize(g, kindObservation))
	out[1] = int64(tensorSize(g, kindInfoState))
	out[2] = int64(2 * g.MaxGameLength()) // every card is dealt by a chance node, then played
	out[3] = int64(g.MaxUtility())
	return nil
}

// history writes the (player, action) pairs of every action so far into
// out when they fit (len >= 2 per action), and returns their number.
func (st *spielState) history(out []int32) int {
	n := len(st.hist)
	if 2*n <= len(out) {
		for i := range n {
			out[2*i], out[2*i+1] = int32(st.who[i]), st.hist[i]
		}
	}
	return n
}
