package card_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/env/card"
	"github.com/davidgoliath/dgenv/obs"
)

// TestPackBitsMatchesAPlainLoop compares the word-at-a-time packer with one
// bit at a time, for every length up to 200 and bytes of every kind (0, 1,
// high bit set, anything): bit i is src[i]'s low bit.
func TestPackingOfEachLayout(t *testing.T) {
	for p := 3; p <= 6; p++ {
		l := card.NewLayout(p)
		pk := l.Packing()
		assert.Equal(t, (l.Size+7)/8, pk.Bytes)
		covered := make([]bool, l.Size)
		sum := 0
		for _, s := range pk.Extra {
			for i := s.Offset; i < s.Offset+s.Length; i++ {
				covered[i] = true
			}
			sum += s.Length
		}
		assert.Equal(t, sum, pk.ExtraBytes)
		for _, s := range l.Sections {
			for i := s.Offset; i < s.Offset+s.Size(); i++ {
				require.Equal(t, s.Max > 1, covered[i], "P=%d %s element %d: carried as extra iff its max > 1", p, s.Name, i)
			}
		}
	}
	l4 := card.NewLayout(4)
	pk := l4.Packing()
	assert.Equal(t, []obs.Span{
		{Name: "prize_counts", Offset: 450, Length: 20},
		{Name: "tricks_left,deal_index,deals_left,totals", Offset: 863, Length: 11},
	}, pk.Extra)
	assert.Equal(t, 110, pk.Bytes)
}

// TestPackUnpackRoundTrip packs random valid observations (0/1 where the
// section's max is 1, anything up to the max elsewhere) and unpacks them.
func TestPackUnpackRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for p := 3; p <= 6; p++ {
		l := card.NewLayout(p)
		pk := l.Packing()
		for range 200 {
			o := make([]uint8, l.Size)
			for _, s := range l.Sections {
				for i := s.Offset; i < s.Offset+s.Size(); i++ {
					o[i] = uint8(s.Min + r.IntN(s.Max-s.Min+1))
				}
			}
			bits, extra := make([]uint8, pk.Bytes), make([]uint8, pk.ExtraBytes)
			obs.PackBits(bits, o)
			pk.PackExtra(extra, o)
			back := make([]uint8, l.Size)
			pk.Unpack(back, bits, extra)
			require.Equal(t, o, back, "P=%d", p)
		}
	}
}

// checkEncodeBits checks that EncodeBits gives the packed form of want (the
// byte tensor Encode wrote for seat): it unpacks to want, its extra bytes
// are PackExtra's, and its bits are PackBits' except at the extra
// sections' positions, where they are 0.
func checkEncodeBits(t *testing.T, l *card.Layout, b *card.Board, seat int, want []uint8) {
	t.Helper()
	pk := l.Packing()
	bits := make([]uint8, pk.Bytes+1)
	extra := make([]uint8, pk.ExtraBytes+1)
	bits[pk.Bytes], extra[pk.ExtraBytes] = 0xEE, 0xEE
	l.EncodeBits(bits[:pk.Bytes], extra[:pk.ExtraBytes], b, seat)
	if bits[pk.Bytes] != 0xEE || extra[pk.ExtraBytes] != 0xEE {
		t.Fatalf("seat %d: EncodeBits wrote past its buffers", seat)
	}
	back := make([]uint8, l.Size)
	pk.Unpack(back, bits[:pk.Bytes], extra[:pk.ExtraBytes])
	if !slices.Equal(back, want) {
		for i := range want {
			if back[i] != want[i] {
				t.Fatalf("seat %d: EncodeBits unpacks to %d at element %d, Encode wrote %d", seat, back[i], i, want[i])
			}
		}
	}
	wantExtra := make([]uint8, pk.ExtraBytes)
	pk.PackExtra(wantExtra, want)
	if !slices.Equal(extra[:pk.ExtraBytes], wantExtra) {
		t.Fatalf("seat %d: extra bytes %v, want %v", seat, extra[:pk.ExtraBytes], wantExtra)
	}
	masked := slices.Clone(want)
	for _, sp := range pk.Extra {
		clear(masked[sp.Offset : sp.Offset+sp.Length])
	}
	wantBits := make([]uint8, pk.Bytes)
	obs.PackBits(wantBits, masked)
	if !slices.Equal(bits[:pk.Bytes], wantBits) {
		t.Fatalf("seat %d: bits differ from PackBits of the tensor with its extra sections zeroed", seat)
	}
}

// TestEncodeBitsMatchesEncode compares the direct bit encoder with the byte
// encoder on random boards of every player count, from every seat.
func TestEncodeBitsMatchesEncode(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for trial := range 3000 {
		data := make([]byte, 200)
		for i := range data {
			data[i] = uint8(r.IntN(256))
		}
		data[0] = uint8(trial % 4) // every player count
		b := boardFrom(data)
		l := card.NewLayout(int(b.Players))
		o := make([]uint8, l.Size)
		for seat := range int(b.Players) {
			l.Encode(o, &b, seat)
			checkEncodeBits(t, &l, &b, seat, o)
		}
	}
	l6 := card.NewLayout(card.MaxPlayers)
	assert.LessOrEqual(t, l6.Packing().Bytes, 160, "EncodeBits' buffer")
}

// packedMidDeal is midDeal's observation of seat 1 and its packed form.
func packedMidDeal() (pk obs.Packing, o, bits, extra []uint8) {
	l := card.NewLayout(4)
	pk = l.Packing()
	o = make([]uint8, l.Size)
	l.Encode(o, midDeal(), 1)
	bits, extra = make([]uint8, pk.Bytes), make([]uint8, pk.ExtraBytes)
	obs.PackBits(bits, o)
	pk.PackExtra(extra, o)
	return pk, o, bits, extra
}

// BenchmarkPack is the server's extra work per env-step in a packed session
// (the mask's 12 bytes aside).
func BenchmarkPack(b *testing.B) {
	pk, o, bits, extra := packedMidDeal()
	b.ReportAllocs()
	for b.Loop() {
		obs.PackBits(bits, o)
		pk.PackExtra(extra, o)
	}
}

// BenchmarkUnpack is a Go client's work per env-step to rebuild the obs.
// BenchmarkEncodeBits encodes the packed form straight from the board.
func BenchmarkEncodeBits(b *testing.B) {
	l, bd := card.NewLayout(4), midDeal()
	pk := l.Packing()
	bits, extra := make([]uint8, pk.Bytes), make([]uint8, pk.ExtraBytes)
	b.ReportAllocs()
	for b.Loop() {
		l.EncodeBits(bits, extra, bd, 1)
	}
}

func BenchmarkUnpack(b *testing.B) {
	pk, o, bits, extra := packedMidDeal()
	b.ReportAllocs()
	for b.Loop() {
		pk.Unpack(o, bits, extra)
	}
}
