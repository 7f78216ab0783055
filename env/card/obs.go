// The card game's observation encoder turns what one seat of a David &
// Goliath table knows into a fixed-size tensor of small integers (one uint8
// each).
//
// It owns the Board (the table as the encoder reads it), the Layout (named
// sections with offsets, shapes and value ranges, published by the server)
// and Encode, which writes one observation into a caller's buffer without
// allocating. It must not do I/O or know about HTTP, msgpack or configuration.
//
// Every feature is a small non-negative integer carried as uint8: hands,
// tricks and prize piles are 0/1 planes over the 90 card ids, counts fit in a
// byte, and score totals are split into a coarse and a fine byte so they stay
// exact. uint8 is 4x less to send than float32; clients convert at the edge.

package card

import (
	"encoding/binary"
	"math/bits"

	"github.com/davidgoliath/dgenv/obs"
)

// Card and table sizes shared by the engine and the encoder.
const (
	NumColours = 5                     // red, yellow, green, blue, purple
	MaxValue   = 18                    // card values run 1..18
	NumCards   = NumColours * MaxValue // card id = colour*18 + value-1
	MinPlayers = 3
	MaxPlayers = 6
	HandSize   = 15 // cards dealt to every player, and tricks per deal
	MaxDeals   = 90 // deals in a game at most (keeps every total below 2^14)
	// TotalScale splits a score total t into t/TotalScale and t%TotalScale.
	TotalScale = 64
)

// Board is the whole table as the encoder reads it. The engine keeps its
// state in this struct so encoding needs no copy. Seats are absolute here;
// Encode rotates them to the observer's view.
type Board struct {
	Hands  [MaxPlayers][NumColours]uint32 // bit v-1 set: the seat holds value v of that colour
	Prizes [MaxPlayers][NumColours]uint32 // cards the seat has taken this deal, same bits
	Totals [MaxPlayers]int32              // points of the deals already finished
	Trick  [MaxPlayers]uint8              // card ids of the current trick, in play order
	Voids  [MaxPlayers]uint8              // bit c set: the seat did not follow colour c this deal

	Players    uint8 // 3..6
	TrickLen   uint8 // cards in the current trick, 0..Players-1 between actions
	Leader     uint8 // absolute seat that led (or is to lead) the current trick
	TricksDone uint8 // tricks finished in this deal, 0..15
	Deal       uint8 // 0-based index of the deal in progress
	Deals      uint8 // deals in the game
}

// Layout is the observation layout for one player count.
type Layout struct {
	Players  int
	Size     int
	Sections []obs.Section

	// Offsets of each section, kept as fields so Encode does no lookups.
	hand, trick, prizeCounts, prizes, voids, leadColour, leader, position,
	tricksLeft, dealIndex, dealsLeft, totals int
}

// NewLayout returns the layout for a table of players seats (3..6).
//
// The size is the sum of (P = players):
//
//	hand           90     cards in the observer's hand
//	current_trick  P*90   card played in this trick by each seat
//	prize_counts   P*5    cards taken this deal per seat and colour
//	prizes         P*90   which cards each seat has taken this deal
//	voids          P*5    colours each seat has shown to be out of
//	lead_colour    5      colour led in this trick
//	leader         P      seat that led this trick
//	trick_position P      cards already in this trick
//	tricks_left    1      tricks left in this deal, the current one included
//	deal_index     1      0-based deal number
//	deals_left     1      deals after this one
//	totals         P*2    points of earlier deals: total/64 and total%64
func NewLayout(players int) Layout {
	p := players
	maxDeal := 3 * p // cards of one colour in the deck
	l := Layout{Players: p}
	add := func(off *int, name string, shape []int, max int, doc string) {
		*off = l.Size
		s := obs.Section{Name: name, Offset: l.Size, Shape: shape, Max: max, Doc: doc}
		l.Sections = append(l.Sections, s)
		l.Size += s.Size()
	}
	add(&l.hand, "hand", []int{NumCards}, 1,
		"1 where the observer holds the card (index = card id)")
	add(&l.trick, "current_trick", []int{p, NumCards}, 1,
		"row j: 1 at the card played in this trick by the seat j places clockwise from the observer")
	add(&l.prizeCounts, "prize_counts", []int{p, NumColours}, maxDeal,
		"row j: number of cards of each colour taken this deal by the seat j places clockwise")
	add(&l.prizes, "prizes", []int{p, NumCards}, 1,
		"row j: 1 at each card taken this deal by the seat j places clockwise (values decide the score)")
	add(&l.voids, "voids", []int{p, NumColours}, 1,
		"row j: 1 where the seat j places clockwise failed to follow that colour this deal, so holds none")
	add(&l.leadColour, "lead_colour", []int{NumColours}, 1,
		"one-hot colour of the first card of this trick; all 0 when no card is in the trick")
	add(&l.leader, "leader", []int{p}, 1,
		"one-hot: the seat (places clockwise from the observer) that leads this trick")
	add(&l.position, "trick_position", []int{p}, 1,
		"one-hot: number of cards already played to this trick (0 = leading)")
	add(&l.tricksLeft, "tricks_left", []int{1}, HandSize,
		"tricks still to finish in this deal, the current one included")
	add(&l.dealIndex, "deal_index", []int{1}, MaxDeals-1,
		"0-based number of the deal in progress")
	add(&l.dealsLeft, "deals_left", []int{1}, MaxDeals-1,
		"deals still to play after this one")
	add(&l.totals, "totals", []int{p, 2}, 255,
		"row j: points of earlier deals of the seat j places clockwise, as [total/64, total%64]")
	return l
}

// Section returns the named section and whether it exists.
func (l *Layout) Section(name string) (obs.Section, bool) {
	for _, s := range l.Sections {
		if s.Name == name {
			return s, true
		}
	}
	return obs.Section{}, false
}

// Planes mirrors a Board's hands and prize piles as 0/1 bytes over card
// ids. The engine keeps it up to date (one byte per card moved), so encoding
// copies rows instead of expanding bits on every step.
type Planes struct {
	Hand  [MaxPlayers][NumCards]uint8
	Prize [MaxPlayers][NumCards]uint8
}

// Sync rebuilds the planes from the board's bit sets.
func (pl *Planes) Sync(b *Board) {
	for s := range MaxPlayers {
		WritePlane(pl.Hand[s][:], &b.Hands[s])
		WritePlane(pl.Prize[s][:], &b.Prizes[s])
	}
}

// Encode writes the observation of seat (absolute, 0..Players-1) into dst,
// which must hold at least l.Size elements. It writes every element (no
// clearing needed) and does not allocate. Every seat-indexed row is rotated
// so row 0 is the observer and row j the seat j places clockwise from it.
// This is the reference encoder, reading only the bit sets; EncodePlanes is
// the same tensor from kept-up-to-date planes.
func (l *Layout) Encode(dst []uint8, b *Board, seat int) {
	dst = dst[:l.Size]
	p := int(b.Players)
	WritePlane(dst[l.hand:l.hand+NumCards], &b.Hands[seat])
	for j := range p {
		s := seat + j
		if s >= p {
			s -= p
		}
		WritePlane(dst[l.prizes+j*NumCards:l.prizes+(j+1)*NumCards], &b.Prizes[s])
	}
	l.encodeRest(dst, b, seat)
}

// EncodePlanes writes the same tensor as Encode, copying hand and prize rows
// from pl, which must mirror b.
func (l *Layout) EncodePlanes(dst []uint8, b *Board, pl *Planes, seat int) {
	dst = dst[:l.Size]
	p := int(b.Players)
	// Fixed-size array copies compile to inline vector moves, no call.
	*(*[NumCards]uint8)(dst[l.hand:]) = pl.Hand[seat]
	for j := range p {
		s := seat + j
		if s >= p {
			s -= p
		}
		*(*[NumCards]uint8)(dst[l.prizes+j*NumCards:]) = pl.Prize[s]
	}
	l.encodeRest(dst, b, seat)
}

// encodeRest writes every section but hand and prizes.
func (l *Layout) encodeRest(dst []uint8, b *Board, seat int) {
	p := int(b.Players)
	tr := dst[l.trick : l.trick+p*NumCards]
	for j := range p {
		*(*[NumCards]uint8)(tr[j*NumCards:]) = [NumCards]uint8{}
	}
	n := int(b.TrickLen)
	rel := int(b.Leader) - seat
	if rel < 0 {
		rel += p
	}
	for i := range n {
		j := rel + i
		if j >= p {
			j -= p
		}
		tr[j*NumCards+int(b.Trick[i])] = 1
	}

	for j := range p {
		s := seat + j
		if s >= p {
			s -= p
		}
		pr := &b.Prizes[s]
		counts := dst[l.prizeCounts+j*NumColours : l.prizeCounts+(j+1)*NumColours]
		voids := dst[l.voids+j*NumColours : l.voids+(j+1)*NumColours]
		v := b.Voids[s]
		for c := range NumColours {
			counts[c] = uint8(bits.OnesCount32(pr[c]))
			voids[c] = (v >> c) & 1
		}
		t := b.Totals[s]
		dst[l.totals+2*j] = uint8(min(t/TotalScale, 255))
		dst[l.totals+2*j+1] = uint8(t % TotalScale)
	}

	lc := dst[l.leadColour : l.leadColour+NumColours]
	clear(lc)
	if n > 0 {
		lc[int(b.Trick[0])/MaxValue] = 1
	}
	ld := dst[l.leader : l.leader+p]
	clear(ld)
	ld[rel] = 1
	pos := dst[l.position : l.position+p]
	clear(pos)
	pos[n] = 1
	dst[l.tricksLeft] = HandSize - b.TricksDone
	dst[l.dealIndex] = b.Deal
	dst[l.dealsLeft] = b.Deals - b.Deal - 1
}

// WritePlane writes a 90-element 0/1 plane over card ids from per-colour bit
// sets (bit v-1 = value v): every element of dst[:90] is written, nothing
// beyond it. Per colour it is three stores (8 + 8 + 2 bytes) instead of a
// clear and a loop over the bits.
func WritePlane(dst []uint8, m *[NumColours]uint32) {
	d := (*[NumCards]uint8)(dst)
	le := binary.LittleEndian
	for c := range NumColours {
		x := m[c]
		row := (*[MaxValue]uint8)(d[c*MaxValue:])
		le.PutUint64(row[0:8], obs.Spread8(uint8(x)))
		le.PutUint64(row[8:16], obs.Spread8(uint8(x>>8)))
		le.PutUint16(row[16:18], uint16(obs.Spread8(uint8(x>>16&3))))
	}
}
