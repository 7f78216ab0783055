package card

import (
	"slices"

	"github.com/davidgoliath/dgenv/env"
)

// ErrIllegalAction is wrapped by every *IllegalActionError.
var ErrIllegalAction = env.ErrIllegalAction

// IllegalActionError says which action was refused and what was legal
// (spiel's, the same for every game).
type IllegalActionError = env.IllegalActionError

// Play is one card played by one seat.
type Play struct {
	Seat uint8
	Card Card
}

// DealRecord is one deal of a game as it happened.
type DealRecord struct {
	Dealer   int
	Hands    [MaxPlayers][HandSize]Card // the hands as dealt, each sorted ascending
	Plays    [MaxPlayers * HandSize]Play
	NumPlays int
	Scores   [MaxPlayers]int // points of the deal, valid once Done
	Done     bool
}

// Record is a game as it happened: the hands of every deal and every play.
type Record struct {
	Params Params
	Deals  []DealRecord
}

// Totals adds up the scores of the finished deals.
func (r *Record) Totals() []int {
	t := make([]int, r.Params.Players)
	for i := range r.Deals {
		if r.Deals[i].Done {
			for s := range t {
				t[s] += r.Deals[i].Scores[s]
			}
		}
	}
	return t
}

// Clone returns a deep copy.
func (r *Record) Clone() *Record {
	if r == nil {
		return nil
	}
	d := make([]DealRecord, len(r.Deals), max(len(r.Deals), r.Params.Deals))
	copy(d, r.Deals)
	return &Record{Params: r.Params, Deals: d}
}

func (r *Record) reset(p Params) {
	r.Params = p
	if cap(r.Deals) < p.Deals {
		r.Deals = make([]DealRecord, 0, p.Deals)
	}
	r.Deals = r.Deals[:0]
}

// Hands is one deal: Hands[seat] lists the seat's cards.
type Hands = [][]Card

// State is a game in progress. Its table, RNG and scores are plain values;
// Clone also copies the record. The zero State is not usable: get one from a
// Game.
type State struct {
	game *Game
	b    Board
	pl   Planes // b's hands and prizes as bytes, for fast encoding

	dealer    uint8
	dealEnded bool // the last action finished a deal (Rewards are its scores)
	terminal  bool
	lastDeal  [MaxPlayers]int32 // scores of the deal the last action finished

	// plays of the deal in progress, in order; play k is at index
	// TricksDone*Players + TrickLen. Kept in the state (not only in the
	// record, which it reaches at the deal's end or on syncRecord) so the
	// per-step write needs no pointer chase.
	plays [MaxPlayers * HandSize]Play

	rng    RNG          // deals the next deal
	forced [][]handsArr // deals to use before drawing from rng (explicit deals, replays)
	rec    *Record      // nil: no record kept
}

// numPlays counts the plays of the deal in progress.
func (s *State) numPlays() int {
	return int(s.b.TricksDone)*int(s.b.Players) + int(s.b.TrickLen)
}

// syncRecord copies the plays of the deal in progress into the record.
func (s *State) syncRecord() {
	r := s.rec
	if r == nil || len(r.Deals) == 0 {
		return
	}
	d := &r.Deals[len(r.Deals)-1]
	if d.Done {
		return
	}
	d.NumPlays = s.numPlays()
	copy(d.Plays[:], s.plays[:d.NumPlays])
}

type handsArr = [MaxPlayers][HandSize]Card

// Game returns the game this state belongs to.
func (s *State) Game() *Game { return s.game }

// Board exposes the table for encoders and bots. Callers must not modify it.
func (s *State) Board() *Board { return &s.b }

// CurrentPlayer is the seat to act, or TerminalPlayer.
func (s *State) CurrentPlayer() int {
	if s.terminal {
		return env.TerminalPlayer
	}
	return s.current()
}

func (s *State) current() int {
	p := int(s.b.Leader) + int(s.b.TrickLen)
	if p >= int(s.b.Players) {
		p -= int(s.b.Players)
	}
	return p
}

// IsTerminal reports whether the game is over.
func (s *State) IsTerminal() bool { return s.terminal }

// Dealer of the deal in progress (or of the last deal once terminal).
func (s *State) Dealer() int { return int(s.dealer) }

// DealIndex is the 0-based deal in progress (the last one once terminal).
func (s *State) DealIndex() int { return int(s.b.Deal) }

// TricksDone counts the finished tricks of the deal in progress.
func (s *State) TricksDone() int { return int(s.b.TricksDone) }

// Trick returns the cards of the current trick in play order, and the seat that led it.
func (s *State) Trick() ([]Card, int) {
	return slices.Clone(s.b.Trick[:s.b.TrickLen]), int(s.b.Leader)
}

// Hand lists a seat's cards in ascending id order.
func (s *State) Hand(seat int) []Card { return maskCards(&s.b.Hands[seat]) }

// Prizes lists the cards a seat has taken this deal, ascending.
func (s *State) Prizes(seat int) []Card { return maskCards(&s.b.Prizes[seat]) }

// DealScore is what a seat's prize pile scores now.
func (s *State) DealScore(seat int) int { return Score(&s.b.Prizes[seat]) }

// Voids is a bit set of the colours seat has shown to be out of this deal.
func (s *State) Voids(seat int) uint8 { return s.b.Voids[seat] }

func maskCards(m *[NumColours]uint32) []Card {
	var out []Card
	for c := range NumColours {
		for b := m[c]; b != 0; b &= b - 1 {
			out = append(out, CardID(c, trailingZeros(b)+1))
		}
	}
	return out
}

// allowed is the bit set of colours the player to act may play.
func (s *State) allowed(p int) uint8 {
	if s.b.TrickLen > 0 {
		lead := int(s.b.Trick[0]) / MaxValue
		if s.b.Hands[p][lead] != 0 {
			return 1 << lead
		}
	}
	return 1<<NumColours - 1
}

// IsLegal reports whether action a is legal now.
func (s *State) IsLegal(a Action) bool {
	if s.terminal || a < 0 || a >= NumActions {
		return false
	}
	p := s.current()
	c := a / MaxValue
	return s.allowed(p)&(1<<c) != 0 && s.b.Hands[p][c]&(1<<(a%MaxValue)) != 0
}

// AppendLegalActions appends the legal actions in ascending order to dst.
func (s *State) AppendLegalActions(dst []Action) []Action {
	if s.terminal {
		return dst
	}
	p := s.current()
	al := s.allowed(p)
	for c := range NumColours {
		if al&(1<<c) == 0 {
			continue
		}
		for m := s.b.Hands[p][c]; m != 0; m &= m - 1 {
			dst = append(dst, c*MaxValue+trailingZeros(m))
		}
	}
	return dst
}

// LegalActions lists the legal actions in ascending order (empty when terminal).
func (s *State) LegalActions() []Action {
	return s.AppendLegalActions(make([]Action, 0, HandSize))
}

// NumLegal counts the legal actions.
func (s *State) NumLegal() int {
	if s.terminal {
		return 0
	}
	p := s.current()
	al := s.allowed(p)
	n := 0
	for c := range NumColours {
		if al&(1<<c) != 0 {
			n += popcount(s.b.Hands[p][c])
		}
	}
	return n
}

// WriteMask writes 1 at every legal action and 0 elsewhere into dst[:90].
func (s *State) WriteMask(dst []uint8) {
	d := (*[NumActions]uint8)(dst)
	if s.terminal {
		*d = [NumActions]uint8{}
		return
	}
	p := s.current()
	hand := &s.pl.Hand[p]
	if s.b.TrickLen > 0 {
		lead := int(s.b.Trick[0]) / MaxValue
		if s.b.Hands[p][lead] != 0 {
			*d = [NumActions]uint8{}
			*(*[MaxValue]uint8)(d[lead*MaxValue:]) = *(*[MaxValue]uint8)(hand[lead*MaxValue:])
			return
		}
	}
	*d = *hand
}

// LegalActionsMask is a 90-long mask of the legal actions.
func (s *State) LegalActionsMask() []bool {
	var m [NumActions]uint8
	s.WriteMask(m[:])
	out := make([]bool, NumActions)
	for i, v := range m {
		out[i] = v == 1
	}
	return out
}

// ApplyAction plays card a for the seat to act. An illegal action returns an
// *IllegalActionError and leaves the state unchanged.
func (s *State) ApplyAction(a Action) error {
	if !s.IsLegal(a) {
		p := s.CurrentPlayer()
		return &IllegalActionError{Env: -1, Player: p, Action: a, Legal: s.LegalActions()}
	}
	s.apply(a)
	return nil
}

// apply plays a legal action. It is the per-step hot path: no allocation.
func (s *State) apply(a Action) {
	b := &s.b
	p := s.current()
	c := a / MaxValue
	b.Hands[p][c] &^= 1 << (a % MaxValue)
	s.pl.Hand[p][a] = 0
	if b.TrickLen > 0 {
		if lead := int(b.Trick[0]) / MaxValue; lead != c {
			b.Voids[p] |= 1 << lead
		}
	}
	s.plays[s.numPlays()] = Play{Seat: uint8(p), Card: Card(a)}
	b.Trick[b.TrickLen] = Card(a)
	b.TrickLen++
	s.dealEnded = false
	if b.TrickLen == b.Players {
		s.finishTrick()
	}
}

// TrickWinners returns the positions in play order of the highest and the
// lowest card of a complete trick, as RULES.md settles them: highest value
// (last played wins ties), lowest value (last played wins ties), and when all
// values are equal the last card is the highest and the second to last the lowest.
func TrickWinners(trick []Card) (hi, lo int) {
	for i := 1; i < len(trick); i++ {
		v := trick[i] % MaxValue
		if v >= trick[hi]%MaxValue {
			hi = i
		}
		if v <= trick[lo]%MaxValue {
			lo = i
		}
	}
	if hi == lo { // every value equal: both picked the last card
		lo = len(trick) - 2
	}
	return hi, lo
}

func (s *State) finishTrick() {
	b := &s.b
	p := int(b.Players)
	hi, lo := TrickWinners(b.Trick[:p])
	hiSeat := (int(b.Leader) + hi) % p
	loSeat := (int(b.Leader) + lo) % p
	for i := range p {
		card := b.Trick[i]
		who := hiSeat
		if i == hi {
			who = loSeat
		}
		b.Prizes[who][card/MaxValue] |= 1 << (card % MaxValue)
		s.pl.Prize[who][card] = 1
	}
	b.Leader = uint8(hiSeat)
	b.TrickLen = 0
	b.TricksDone++
	if b.TricksDone == TricksPerDeal {
		s.finishDeal()
	}
}

func (s *State) finishDeal() {
	b := &s.b
	p := int(b.Players)
	var d *DealRecord
	if s.rec != nil {
		d = &s.rec.Deals[len(s.rec.Deals)-1]
		d.NumPlays = p * TricksPerDeal
		copy(d.Plays[:], s.plays[:d.NumPlays])
		d.Done = true
	}
	for seat := range p {
		pts := int32(Score(&b.Prizes[seat]))
		s.lastDeal[seat] = pts
		b.Totals[seat] += pts
		if d != nil {
			d.Scores[seat] = int(pts)
		}
	}
	s.dealEnded = true
	if int(b.Deal)+1 >= int(b.Deals) {
		s.terminal = true
		return
	}
	b.Deal++
	s.startDeal()
}

// startDeal deals deal b.Deal: from the forced queue if one is waiting,
// otherwise by shuffling with the state's RNG.
func (s *State) startDeal() {
	b := &s.b
	p := int(b.Players)
	s.dealer = uint8((s.game.params.FirstDealer + int(b.Deal)) % p)
	b.Leader = uint8((int(s.dealer) + 1) % p)
	b.TrickLen = 0
	b.TricksDone = 0
	b.Hands = [MaxPlayers][NumColours]uint32{}
	b.Prizes = [MaxPlayers][NumColours]uint32{}
	b.Voids = [MaxPlayers]uint8{}

	var hands *handsArr
	if len(s.forced) > 0 {
		hands = &s.forced[0][0]
		s.forced = s.forced[1:]
	}
	var dealt handsArr
	if hands == nil {
		var deck [NumActions]Card
		n := 0
		vals := DeckValues(p)
		for c := range NumColours {
			for v := 1; v <= vals; v++ {
				deck[n] = CardID(c, v)
				n++
			}
		}
		for i := n - 1; i > 0; i-- {
			j := s.rng.IntN(i + 1)
			deck[i], deck[j] = deck[j], deck[i]
		}
		for seat := range p {
			copy(dealt[seat][:], deck[seat*HandSize:(seat+1)*HandSize])
		}
		hands = &dealt
	}
	for seat := range p {
		for _, c := range hands[seat] {
			b.Hands[seat][c/MaxValue] |= 1 << (c % MaxValue)
		}
	}
	s.pl.Sync(b)
	if r := s.rec; r != nil {
		r.Deals = r.Deals[:len(r.Deals)+1]
		d := &r.Deals[len(r.Deals)-1]
		d.Dealer = int(s.dealer)
		d.NumPlays = 0
		d.Done = false
		d.Scores = [MaxPlayers]int{}
		for seat := range p {
			// Sorted from the bit sets, which are in id order.
			i := 0
			for c := range NumColours {
				for m := b.Hands[seat][c]; m != 0; m &= m - 1 {
					d.Hands[seat][i] = CardID(c, trailingZeros(m)+1)
					i++
				}
			}
		}
	}
}

// newGame starts a fresh game on this state, keeping its RNG (so a run of
// games from one seed is one reproducible stream).
func (s *State) newGame() {
	g := s.game
	s.b = Board{Players: uint8(g.params.Players), Deals: uint8(g.params.Deals)}
	s.dealEnded = false
	s.terminal = false
	if s.rec != nil {
		s.rec.reset(g.params)
	}
	s.startDeal()
}

// Rewards are each seat's reward for the last action: the deal's points when
// it finished a deal, 0 otherwise.
func (s *State) Rewards() []float64 {
	out := make([]float64, s.game.params.Players)
	if s.dealEnded {
		for i := range out {
			out[i] = float64(s.lastDeal[i])
		}
	}
	return out
}

// Returns are each seat's points so far (the finished deals).
func (s *State) Returns() []float64 {
	out := make([]float64, s.game.params.Players)
	for i := range out {
		out[i] = float64(s.b.Totals[i])
	}
	return out
}

// Totals are each seat's points of the finished deals.
func (s *State) Totals() []int {
	out := make([]int, s.game.params.Players)
	for i := range out {
		out[i] = int(s.b.Totals[i])
	}
	return out
}

// Winners lists the seats with the highest total (ties share the win).
func (s *State) Winners() []int {
	best := int32(-1)
	var w []int
	for i := range s.game.params.Players {
		switch t := s.b.Totals[i]; {
		case t > best:
			best, w = t, []int{i}
		case t == best:
			w = append(w, i)
		}
	}
	return w
}

// Clone returns an independent copy.
func (s *State) Clone() *State {
	c := *s
	s.syncRecord()
	c.rec = s.rec.Clone()
	return &c
}

// History lists every action of the game so far in order.
func (s *State) History() []Action {
	if s.rec == nil {
		return nil
	}
	s.syncRecord()
	var h []Action
	for i := range s.rec.Deals {
		d := &s.rec.Deals[i]
		for _, pl := range d.Plays[:d.NumPlays] {
			h = append(h, int(pl.Card))
		}
	}
	return h
}

// Record returns a copy of the game record (nil if the state keeps none).
func (s *State) Record() *Record {
	s.syncRecord()
	return s.rec.Clone()
}

// ObservationTensor encodes what player knows, from player's seat.
func (s *State) ObservationTensor(player int) []uint8 {
	l := s.game.layout
	out := make([]uint8, l.Size)
	l.EncodePlanes(out, &s.b, &s.pl, player)
	return out
}

// WriteObservation encodes player's observation into dst (len >= the layout size).
func (s *State) WriteObservation(dst []uint8, player int) {
	s.game.layout.EncodePlanes(dst, &s.b, &s.pl, player)
}

// ActionString names an action: "green 12".
func (s *State) ActionString(player int, a Action) string { return CardString(Card(a)) }
