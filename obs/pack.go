package obs

import (
	"encoding/binary"
	"math/bits"
)

// Bit-packed observations: a transport form with about a sixth of the bytes.
//
// Most of an observation is 0/1 flags. PackBits writes one bit per element
// (element i in byte i/8, bit i%8: numpy's bitorder="little"), the
// element's low bit. The few sections whose values go above 1 (counts,
// totals) are carried beside the bits as plain bytes, in layout order: the
// "extra" bytes. Unpacking is np.unpackbits(bits, axis=-1, count=Size,
// bitorder="little") and then copying each extra span back over its
// section, which gives the uint8 observation exactly.

// Span is a run of elements of the observation.
type Span struct {
	Name   string
	Offset int
	Length int
}

// Packing describes the packed form of one layout's observation.
type Packing struct {
	// Bytes is the size of one observation's bits: ceil(Size/8).
	Bytes int
	// Extra lists the sections carried as bytes (those with Max > 1), in
	// the order their bytes follow each other.
	Extra []Span
	// ExtraBytes is the sum of the extra spans' lengths.
	ExtraBytes int
}

// Packing returns how l's observation is packed.
func (l *Layout) Packing() Packing { return PackingOf(l.Size, l.Sections) }

// PackingOf returns how an observation of size elements in these sections
// (in order) is packed: any game's layout packs this way.
func PackingOf(size int, sections []Section) Packing {
	p := Packing{Bytes: PackedLen(size)}
	for _, s := range sections {
		if s.Max <= 1 {
			continue
		}
		n := s.Size()
		if k := len(p.Extra); k > 0 && p.Extra[k-1].Offset+p.Extra[k-1].Length == s.Offset {
			p.Extra[k-1].Name += "," + s.Name // adjacent sections make one span
			p.Extra[k-1].Length += n
		} else {
			p.Extra = append(p.Extra, Span{Name: s.Name, Offset: s.Offset, Length: n})
		}
		p.ExtraBytes += n
	}
	return p
}

// PackedLen is the number of bytes PackBits writes for n elements.
func PackedLen(n int) int { return (n + 7) / 8 }

// PackBits writes bit i of dst as the low bit of src[i], for every
// i < len(src): exact for 0/1 elements; the extra sections' bits are
// whatever their values' low bits are, and unpacking overwrites them. dst
// must hold PackedLen(len(src)) bytes. Unused high bits of the last byte
// are 0.
func PackBits(dst, src []uint8) {
	dst = dst[:PackedLen(len(src))]
	// Eight words (64 elements) at a time, stored as one word.
	d, s := dst, src
	for len(s) >= 64 && len(d) >= 8 {
		w := uint64(packWord(binary.LittleEndian.Uint64(s))) |
			uint64(packWord(binary.LittleEndian.Uint64(s[8:])))<<8 |
			uint64(packWord(binary.LittleEndian.Uint64(s[16:])))<<16 |
			uint64(packWord(binary.LittleEndian.Uint64(s[24:])))<<24 |
			uint64(packWord(binary.LittleEndian.Uint64(s[32:])))<<32 |
			uint64(packWord(binary.LittleEndian.Uint64(s[40:])))<<40 |
			uint64(packWord(binary.LittleEndian.Uint64(s[48:])))<<48 |
			uint64(packWord(binary.LittleEndian.Uint64(s[56:])))<<56
		binary.LittleEndian.PutUint64(d, w)
		d, s = d[8:], s[64:]
	}
	for len(s) >= 8 {
		d[0] = packWord(binary.LittleEndian.Uint64(s))
		d, s = d[1:], s[8:]
	}
	if len(s) > 0 {
		var b byte
		for j, v := range s {
			b |= (v & 1) << j
		}
		d[0] = b
	}
}

// packWord packs the low bits of the eight bytes of x (byte k is element
// k) into one byte, bit k from byte k.
func packWord(x uint64) byte {
	// Gather byte k's low bit into bit 56+k: each partial product lands on
	// its own bit, so nothing carries.
	return byte(((x & 0x0101010101010101) * 0x0102040810204080) >> 56)
}

// PackExtra copies the extra spans of observation src into dst, which must
// hold p.ExtraBytes bytes.
func (p *Packing) PackExtra(dst, src []uint8) {
	k := 0
	for _, s := range p.Extra {
		k += copy(dst[k:k+s.Length], src[s.Offset:s.Offset+s.Length])
	}
}

// Unpack rebuilds the observation dst (Size elements) from its bits and
// extra bytes: the inverse of PackBits and PackExtra.
func (p *Packing) Unpack(dst, bits, extra []uint8) {
	UnpackBits(dst, bits)
	k := 0
	for _, s := range p.Extra {
		k += copy(dst[s.Offset:s.Offset+s.Length], extra[k:k+s.Length])
	}
}

// UnpackBits writes dst[i] = bit i of bits (0 or 1), for every i < len(dst):
// the inverse of PackBits for 0/1 elements.
func UnpackBits(dst, bits []uint8) {
	bits = bits[:PackedLen(len(dst))]
	d := dst
	for len(d) >= 8 && len(bits) > 0 {
		binary.LittleEndian.PutUint64(d, spread8[bits[0]])
		d, bits = d[8:], bits[1:]
	}
	for i := range d {
		d[i] = bits[0] >> i & 1
	}
}

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
	copy(dst, buf[:PackedLen(l.Size)])
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
