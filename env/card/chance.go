package card

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/davidgoliath/dgenv/env"
)

// ChanceState is the card game with OpenSpiel's semantics, the card game's
// env.ChanceState (for the pyspiel game and the C ABI's dg_state_* calls):
// every deal is dealt by chance nodes, one card at a time (card j of a deal
// goes to the seat j+1 places left of the dealer, as at a table), and then
// played by State, the one definition of the rules.
//
// Notes on this implementation:
//   - Chance outcomes are the card ids not yet dealt in this deal, each with
//     the same probability (ChanceRun: the cards left to deal). Actions of
//     players are card ids too (0..89).
//   - State deals from its own RNG; here the deals come from the chance
//     nodes, so when a deal is complete the state is rebuilt from the deals
//     so far (Game.NewStateFromDeals) and the plays are replayed: a few
//     microseconds once per deal, and the rules stay in State alone.
//   - While a deal is being dealt, State already sits at that deal with
//     hands of its own RNG: they are never shown. Observations then come
//     from a copy of its table with the hands dealt so far.
type ChanceState struct {
	sg   *SpielGame
	prm  Params
	s    *State  // nil until the first deal is complete
	hist []int32 // every action so far (chance and plays), in order
	who  []int8  // the player of each action: -1 for chance

	dealing  bool
	deal     int                 // index of the deal in progress (dealing or playing)
	dealt    [MaxPlayers][]Card  // this deal's cards by seat, as dealt
	ndealt   int                 // cards dealt in this deal
	undealt  [NumActions]bool    // cards of the deck not dealt yet in this deal
	deals    []Hands             // every complete deal
	plays    []Play              // plays of the deal in progress
	rewards  [MaxPlayers]float64 // of the last action
	scratchB Board
	scratchO []uint8
}

// NewChanceState implements env.ChanceGame: a game's first chance node.
func (g *SpielGame) NewChanceState() env.ChanceState { return g.newChanceState() }

func (g *SpielGame) newChanceState() *ChanceState {
	st := &ChanceState{sg: g, prm: g.G.params}
	st.startDealing()
	return st
}

// ChanceInfo implements env.ChanceGame.
func (g *SpielGame) ChanceInfo() env.ChanceInfo {
	return env.ChanceInfo{
		MaxChanceOutcomes:          NumActions,
		MaxChanceNodes:             g.G.MaxGameLength(), // every card played was dealt by a chance node
		ObservationTensorSize:      g.G.layout.Size,
		InformationStateTensorSize: infoStateSize(g.G),
	}
}

// infoStateSize is the information state tensor's size: the observation,
// then for every card of this deal's plays the trick it was played in
// (one-hot of 15) and who played it (one-hot of P, seats counted clockwise
// from the observer): with the rules, the whole play sequence of the deal.
// Earlier deals count only through the totals, which are all that matters
// of them for the rest.
func infoStateSize(g *Game) int {
	return g.layout.Size + NumActions*(TricksPerDeal+g.NumPlayers())
}

// Game implements env.ChanceState.
func (st *ChanceState) Game() env.Game { return st.sg }

func (st *ChanceState) players() int { return st.prm.Players }

func (st *ChanceState) dealer() int { return (st.prm.FirstDealer + st.deal) % st.prm.Players }

func (st *ChanceState) startDealing() {
	st.dealing = true
	st.ndealt = 0
	st.plays = st.plays[:0]
	for s := range st.dealt {
		st.dealt[s] = st.dealt[s][:0]
	}
	clear(st.undealt[:])
	for c := range NumActions {
		st.undealt[c] = InDeck(Card(c), st.prm.Players)
	}
}

// IsTerminal implements env.ChanceState.
func (st *ChanceState) IsTerminal() bool { return !st.dealing && st.s != nil && st.s.IsTerminal() }

// CurrentPlayer implements env.ChanceState.
func (st *ChanceState) CurrentPlayer() int {
	switch {
	case st.dealing:
		return env.ChancePlayer
	case st.s.IsTerminal():
		return env.TerminalPlayer
	}
	return st.s.CurrentPlayer()
}

// AppendLegalActions implements env.ChanceState: at a chance node, the
// undealt cards.
func (st *ChanceState) AppendLegalActions(dst []int) []int {
	if st.dealing {
		for c, ok := range st.undealt {
			if ok {
				dst = append(dst, c)
			}
		}
		return dst
	}
	var buf [HandSize]Action
	for _, a := range st.s.AppendLegalActions(buf[:0]) {
		dst = append(dst, int(a))
	}
	return dst
}

// AppendChanceOutcomes implements env.ChanceState: every undealt card is
// equally likely.
func (st *ChanceState) AppendChanceOutcomes(dst []env.ChanceOutcome) []env.ChanceOutcome {
	if !st.dealing {
		return dst
	}
	p := 1 / float64(st.ChanceRun())
	for c, ok := range st.undealt {
		if ok {
			dst = append(dst, env.ChanceOutcome{Action: c, Prob: p})
		}
	}
	return dst
}

// ChanceRun implements env.ChanceState: while dealing, the cards left to
// deal (the deck is exactly the hands).
func (st *ChanceState) ChanceRun() int {
	if !st.dealing {
		return 0
	}
	return st.players()*HandSize - st.ndealt
}

// ApplyAction implements env.ChanceState. Rewards are those since the last
// player's action (OpenSpiel's convention): chance nodes keep the points of
// the deal that just ended until the next player acts.
func (st *ChanceState) ApplyAction(a int) error {
	if st.dealing {
		if a < 0 || a >= NumActions || !st.undealt[a] {
			return &IllegalActionError{Env: -1, Player: env.ChancePlayer, Action: a, Legal: st.AppendLegalActions(nil)}
		}
		p := st.players()
		seat := (st.dealer() + 1 + st.ndealt) % p
		st.dealt[seat] = append(st.dealt[seat], Card(a))
		st.undealt[a] = false
		st.ndealt++
		st.hist = append(st.hist, int32(a))
		st.who = append(st.who, env.ChancePlayer)
		if st.ndealt == p*HandSize {
			if err := st.finishDealing(); err != nil {
				return err
			}
		}
		return nil
	}
	if st.s.IsTerminal() {
		return &IllegalActionError{Env: -1, Player: env.TerminalPlayer, Action: a}
	}
	seat := st.s.CurrentPlayer()
	if err := st.s.ApplyAction(a); err != nil {
		return err
	}
	clear(st.rewards[:])
	st.hist = append(st.hist, int32(a))
	st.who = append(st.who, int8(seat))
	st.plays = append(st.plays, Play{Seat: uint8(seat), Card: Card(a)})
	if r := st.s.Rewards(); len(st.plays) == st.players()*TricksPerDeal {
		copy(st.rewards[:], r)
		if !st.s.IsTerminal() {
			st.deal++
			st.startDealing()
		}
	}
	return nil
}

// finishDealing rebuilds the State from every deal so far and replays the
// plays of the earlier deals.
func (st *ChanceState) finishDealing() error {
	p := st.players()
	h := make(Hands, p)
	for s := range p {
		h[s] = slices.Clone(st.dealt[s])
	}
	st.deals = append(st.deals, h)
	s, err := st.sg.G.NewStateFromDeals(0, st.deals...)
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

// ActionString implements env.ChanceState: "green 12", or "deal green 12"
// for a chance outcome.
func (st *ChanceState) ActionString(player, a int) string {
	name := "action " + strconv.Itoa(a)
	if a >= 0 && a < NumActions {
		name = CardString(Card(a))
	}
	if player == env.ChancePlayer {
		return "deal " + name
	}
	return name
}

// Clone implements env.ChanceState.
func (st *ChanceState) Clone() env.ChanceState { return st.clone() }

func (st *ChanceState) clone() *ChanceState {
	c := &ChanceState{sg: st.sg, prm: st.prm, dealing: st.dealing, deal: st.deal, ndealt: st.ndealt,
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

// board is the table as the player sees it: State's, or while a deal is
// being dealt, the table before that deal with the hands dealt so far.
func (st *ChanceState) board() *Board {
	if !st.dealing {
		return st.s.Board()
	}
	b := &st.scratchB
	if st.s != nil {
		*b = *st.s.Board() // already at this deal: prizes, voids and trick cleared
	} else {
		*b = Board{Players: uint8(st.players()), Deals: uint8(st.prm.Deals)}
	}
	b.Leader = uint8((st.dealer() + 1) % st.players())
	b.TrickLen, b.TricksDone = 0, 0
	b.Hands = [MaxPlayers][NumColours]uint32{}
	for s := range st.players() {
		for _, c := range st.dealt[s] {
			b.Hands[s][c/MaxValue] |= 1 << (c % MaxValue)
		}
	}
	return b
}

// ObservationTensor implements env.ChanceState: the batch API's
// observation of player, as float32.
func (st *ChanceState) ObservationTensor(player int, dst []float32) {
	l := st.sg.G.layout
	if cap(st.scratchO) < l.Size {
		st.scratchO = make([]uint8, l.Size)
	}
	o := st.scratchO[:l.Size]
	l.Encode(o, st.board(), player)
	for i, v := range o {
		dst[i] = float32(v)
	}
}

// InformationStateTensor implements env.ChanceState: the observation, then
// this deal's plays (see infoStateSize).
func (st *ChanceState) InformationStateTensor(player int, dst []float32) {
	st.ObservationTensor(player, dst)
	n := st.sg.G.layout.Size
	p := st.players()
	hist := dst[n:infoStateSize(st.sg.G)]
	clear(hist)
	trick := hist[:NumActions*TricksPerDeal]
	seats := hist[NumActions*TricksPerDeal:]
	for i, pl := range st.plays {
		c := int(pl.Card)
		trick[c*TricksPerDeal+i/p] = 1
		seats[c*p+(int(pl.Seat)-player+p)%p] = 1
	}
}

// ObservationString implements env.ChanceState: what player sees now, in
// words.
func (st *ChanceState) ObservationString(player int) string {
	b := st.board()
	p := st.players()
	var sb strings.Builder
	fmt.Fprintf(&sb, "player %d deal %d/%d dealer %d", player, st.deal+1, st.prm.Deals, st.dealer())
	switch {
	case st.dealing:
		fmt.Fprintf(&sb, " dealing (%d/%d cards)\n", st.ndealt, p*HandSize)
	case st.IsTerminal():
		sb.WriteString(" game over\n")
	default:
		fmt.Fprintf(&sb, " trick %d/%d seat %d to play\n", b.TricksDone+1, TricksPerDeal, st.CurrentPlayer())
	}
	fmt.Fprintf(&sb, "hand: %s\ntrick led by %d:", cardList(maskCards(&b.Hands[player])), b.Leader)
	for i := range int(b.TrickLen) {
		fmt.Fprintf(&sb, " %d:%s", (int(b.Leader)+i)%p, CardString(b.Trick[i]))
	}
	sb.WriteString("\n")
	for s := range p {
		fmt.Fprintf(&sb, "seat %d total %d cards %d prizes %s\n", s, b.Totals[s], len(maskCards(&b.Hands[s])), cardList(maskCards(&b.Prizes[s])))
	}
	return sb.String()
}

// InformationStateString implements env.ChanceState: everything player
// has seen, its own cards as dealt and every play of every deal, in order.
func (st *ChanceState) InformationStateString(player int) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "player %d", player)
	p := st.players()
	k, inDeal := -1, 0
	var mine []Card
	for i, a := range st.hist {
		if st.who[i] < 0 {
			if i == 0 || st.who[i-1] >= 0 { // a new deal
				k++
				inDeal = 0
				mine = mine[:0]
			}
			if (st.prm.FirstDealer+k+1+inDeal)%p == player {
				mine = append(mine, Card(a))
			}
			inDeal++
			continue
		}
		if st.who[i-1] < 0 {
			fmt.Fprintf(&sb, "\ndeal %d dealt: %s\nplays:", k, cardList(mine))
		}
		fmt.Fprintf(&sb, " %d:%s", st.who[i], CardString(Card(a)))
	}
	if n := len(st.hist); n > 0 && st.who[n-1] < 0 {
		fmt.Fprintf(&sb, "\ndeal %d dealing: %s", k, cardList(mine))
	}
	return sb.String()
}

// String shows the whole state (every hand): OpenSpiel's ToString.
func (st *ChanceState) String() string {
	if !st.dealing {
		return st.s.String()
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "deal %d/%d dealer %d dealing (%d/%d cards)\n", st.deal+1, st.prm.Deals, st.dealer(), st.ndealt, st.players()*HandSize)
	b := st.board()
	for s := range st.players() {
		fmt.Fprintf(&sb, "seat %d total %d hand: %s\n", s, b.Totals[s], cardList(st.dealt[s]))
	}
	return sb.String()
}

// WriteReturns implements env.ChanceState: the totals of the finished deals.
func (st *ChanceState) WriteReturns(dst []float64) {
	if st.s == nil {
		clear(dst[:st.players()])
		return
	}
	for i, v := range st.s.Returns() {
		dst[i] = v
	}
}

// WriteRewards implements env.ChanceState: a deal's points when it ends,
// until the next player acts.
func (st *ChanceState) WriteRewards(dst []float64) { copy(dst, st.rewards[:st.players()]) }

// AppendHistory implements env.ChanceState.
func (st *ChanceState) AppendHistory(dst []env.PlayerAction) []env.PlayerAction {
	for i, a := range st.hist {
		dst = append(dst, env.PlayerAction{Player: int(st.who[i]), Action: int(a)})
	}
	return dst
}

// chanceHeader opens ChanceState's text.
const chanceHeader = "david-goliath-spiel v1"

// Serialize implements env.ChanceState: the parameters and every action
// (replaying them is the state).
//
//	david-goliath-spiel v1
//	params 4 4 0              players deals first_dealer (as Serialize's)
//	actions <every chance outcome and play, in order>
func (st *ChanceState) Serialize() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s\n%s\nactions", chanceHeader, st.prm.paramsLine())
	for _, a := range st.hist {
		sb.WriteByte(' ')
		sb.WriteString(strconv.Itoa(int(a)))
	}
	sb.WriteByte('\n')
	return sb.String()
}

// DeserializeChanceState implements env.ChanceGame: it replays the
// actions, checking each.
func (g *SpielGame) DeserializeChanceState(text string) (env.ChanceState, error) {
	return g.deserializeChance(text)
}

func (g *SpielGame) deserializeChance(text string) (*ChanceState, error) {
	lines, err := textLines(text)
	if err != nil {
		return nil, err
	}
	if len(lines) != 3 || lines[0] != chanceHeader {
		return nil, fmt.Errorf("%w: want %q, a params line and an actions line", ErrBadSerialization, chanceHeader)
	}
	if _, err := g.G.readParamsLine(lines[1]); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSerialization, err)
	}
	body, ok := strings.CutPrefix(lines[2], "actions")
	if !ok {
		return nil, fmt.Errorf("%w: want an actions line", ErrBadSerialization)
	}
	st := g.newChanceState()
	for i, f := range strings.Fields(body) {
		a, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%w: action %d: %q is not a number", ErrBadSerialization, i, f)
		}
		if err := st.ApplyAction(a); err != nil {
			return nil, fmt.Errorf("%w: action %d: %v", ErrBadSerialization, i, err)
		}
	}
	return st, nil
}

// resampleStream is the stream of ResampleFromInfostate's draws.
const resampleStream = 0x5e5a

// ResampleFromInfostate implements env.ChanceState: the cards player has
// not seen are dealt anew at random (consistently with every card played
// and every colour a seat has shown to be out of), and the state is built
// by replaying a history, so its history and chance nodes are those of the
// resampled world. Earlier deals are public once played out, and deals to
// come are chance nodes still, so only the deal in progress changes.
func (st *ChanceState) ResampleFromInfostate(player int, seed uint64) (env.ChanceState, error) {
	if player < 0 || player >= st.players() {
		return nil, fmt.Errorf("player %d: not a seat of a game of %d", player, st.players())
	}
	return st.resample(player, seed)
}

func (st *ChanceState) resample(player int, seed uint64) (*ChanceState, error) {
	if st.IsTerminal() {
		return st.clone(), nil
	}
	p := st.players()
	rng := env.NewRNG(seed, resampleStream)
	var hands [MaxPlayers][]Card // the resampled deal in progress, as dealt
	if st.dealing {
		// Every card player has not been dealt (the others' so far and the
		// undealt ones: which is which is hidden from player too), shuffled,
		// and the others' counts dealt back from it.
		var pool []Card
		for s := range p {
			if s != player {
				pool = append(pool, st.dealt[s]...)
			}
		}
		for c, ok := range st.undealt {
			if ok {
				pool = append(pool, Card(c))
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
	out := st.sg.newChanceState()
	for _, a := range st.hist[:start] {
		if err := out.ApplyAction(int(a)); err != nil {
			return nil, err
		}
	}
	next := [MaxPlayers]int{}
	for j := range st.ndealtTotal() {
		seat := (st.dealer() + 1 + j) % p
		if err := out.ApplyAction(int(hands[seat][next[seat]])); err != nil {
			return nil, fmt.Errorf("resampled deal: %w", err)
		}
		next[seat]++
	}
	for _, pl := range st.plays {
		if err := out.ApplyAction(int(pl.Card)); err != nil {
			return nil, fmt.Errorf("resampled play: %w", err)
		}
	}
	return out, nil
}

// ndealtTotal counts the chance nodes of the deal in progress so far.
func (st *ChanceState) ndealtTotal() int {
	if st.dealing {
		return st.ndealt
	}
	return st.players() * HandSize
}
