package obs

import (
	"encoding/binary"
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

// spread8[x] has byte k = bit k of x: eight mask bits become eight 0/1
// bytes in one store.
var spread8 = func() (t [256]uint64) {
	for x := range t {
		for k := range 8 {
			t[x] |= uint64(x>>k&1) << (8 * k)
		}
	}
	return t
}()

// Spread8 is spread8[x]: byte k of the result is bit k of x, for writers
// that turn eight mask bits into eight 0/1 bytes in one store.
func Spread8(x uint8) uint64 { return spread8[x] }
