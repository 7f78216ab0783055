package card

import (
	"encoding/binary"
	"math/bits"

	"github.com/davidgoliath/dgenv/obs"
)

// Packing returns how l's observation is packed.
func (l *Layout) Packing() obs.Packing { return obs.PackingOf(l.Size, l.Sections) }

// encodeBitsOrder is the section order EncodeBits is written for.
var encodeBitsOrder = [...]string{
	"hand", "current_trick", "prize_counts", "prizes", "voids", "lead_colour",
	"leader", "trick_position", "tricks_left", "deal_index", "deals_left", "totals",
}

// maxPackedBytes bounds Packing().Bytes over every player count (1262
// elements at 6 players: 158 bytes).
const maxPackedBytes = 160

// EncodeBits writes the packed form of seat's observation (what Encode
// writes, then PackBits and PackExtra) straight from the board's bit sets,
// never building the byte tensor: dst (the bits) must hold
// l.Packing().Bytes bytes and extra l.Packing().ExtraBytes. Bits at the extra sections' positions are 0.
// It does not allocate.
//
// It walks the sections in the order NewLayout adds them (encodeBitsOrder):
// a layout change must change both. TestEncodeBitsFollowsTheLayout checks
// the order, and TestEncodeBitsMatchesEncode and FuzzEncode the bits.
func (l *Layout) EncodeBits(dst, extra []uint8, b *Board, seat int) {
	// The bits are written in layout order through a 64-bit accumulator
	// into a local buffer (whole-word stores, no read-modify-write), then
	// the trick's few cards are set, then the buffer is copied out.
	var buf [maxPackedBytes + 8]uint8
	w := bitStream{buf: &buf}
	p := int(b.Players)
	w.plane(&b.Hands[seat])      // hand
	w.skip(uint(p * NumCards))   // current_trick: set below
	w.skip(uint(p * NumColours)) // prize_counts: extra bytes
	// prizes; with each seat's prize counts and totals into the extra bytes,
	// which hold prize_counts, then tricks_left, deal_index, deals_left and
	// totals (those four lie together).
	tot := extra[p*NumColours+3:]
	for j := range p {
		s := seat + j
		if s >= p {
			s -= p
		}
		w.plane(&b.Prizes[s])
		for c := range NumColours {
			extra[j*NumColours+c] = uint8(bits.OnesCount32(b.Prizes[s][c]))
		}
		t := b.Totals[s]
		tot[2*j] = uint8(min(t/TotalScale, 255))
		tot[2*j+1] = uint8(t % TotalScale)
	}
	k := p * NumColours
	extra[k] = HandSize - b.TricksDone
	extra[k+1] = b.Deal
	extra[k+2] = b.Deals - b.Deal - 1
	for j := range p { // voids
		s := seat + j
		if s >= p {
			s -= p
		}
		w.put(uint64(b.Voids[s]&(1<<NumColours-1)), NumColours)
	}
	n := int(b.TrickLen)
	rel := int(b.Leader) - seat
	if rel < 0 {
		rel += p
	}
	var lead uint64
	if n > 0 {
		lead = 1 << (int(b.Trick[0]) / MaxValue)
	}
	w.put(lead, NumColours) // lead_colour
	w.put(1<<rel, uint(p))  // leader
	w.put(1<<n, uint(p))    // trick_position
	w.flush()               // the rest (tricks_left .. totals) is extra
	for i := range n {
		j := rel + i
		if j >= p {
			j -= p
		}
		k := l.trick + j*NumCards + int(b.Trick[i])
		buf[k>>3] |= 1 << (k & 7)
	}
	copy(dst, buf[:obs.PackedLen(l.Size)])
}

// bitStream appends bits, least significant first, to a buffer.
type bitStream struct {
	buf *[maxPackedBytes + 8]uint8
	acc uint64 // bits not yet stored
	n   uint   // how many
	pos int    // bytes stored
}

// put appends the low nbits (at most 64) of v, which has no higher bits.
func (w *bitStream) put(v uint64, nbits uint) {
	old := w.n
	w.acc |= v << old
	w.n += nbits
	if w.n >= 64 {
		binary.LittleEndian.PutUint64(w.buf[w.pos:w.pos+8], w.acc)
		w.pos += 8
		w.n -= 64
		w.acc = v >> (64 - old) // the bits of v that did not fit; 0 if all did
	}
}

// skip appends nbits zero bits.
func (w *bitStream) skip(nbits uint) {
	w.n += nbits
	for w.n >= 64 {
		binary.LittleEndian.PutUint64(w.buf[w.pos:w.pos+8], w.acc)
		w.pos += 8
		w.n -= 64
		w.acc = 0
	}
}

// plane appends a 90-card plane (per-colour bit sets, card id = colour*18 +
// value-1) as two words.
func (w *bitStream) plane(m *[NumColours]uint32) {
	lo := uint64(m[0]) | uint64(m[1])<<18 | uint64(m[2])<<36 | uint64(m[3])<<54
	hi := uint64(m[3])>>10 | uint64(m[4])<<8
	w.put(lo, 64)
	w.put(hi, NumCards-64)
}

// flush stores the bits still in the accumulator.
func (w *bitStream) flush() {
	binary.LittleEndian.PutUint64(w.buf[w.pos:w.pos+8], w.acc)
}
