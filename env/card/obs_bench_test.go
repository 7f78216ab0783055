package card_test

import (
	"testing"

	"github.com/davidgoliath/dgenv/env/card"
)

// midDeal is a mid-deal four-player board for the encoder benchmarks.
func midDeal() *card.Board {
	bd := &card.Board{Players: 4, Deals: 4, Deal: 1, TricksDone: 7, TrickLen: 2, Leader: 3,
		Trick: [6]uint8{4, 40}, Totals: [6]int32{50, 70, 90, 300}, Voids: [6]uint8{1, 0, 4, 0}}
	for s := range 4 {
		for c := range card.NumColours {
			bd.Hands[s][c] = 0x155 >> (s + c)
			bd.Prizes[s][c] = 0x0a3 << (s + c)
		}
	}
	return bd
}

// BenchmarkEncode is the reference encoder: rows expanded from bit sets.
func BenchmarkEncode(b *testing.B) {
	l, bd := card.NewLayout(4), midDeal()
	dst := make([]uint8, l.Size)
	b.ReportAllocs()
	for b.Loop() {
		l.Encode(dst, bd, 1)
	}
}

// BenchmarkEncodePlanes is the engine's encoder: hand and prize rows copied
// from kept-up-to-date planes.
func BenchmarkEncodePlanes(b *testing.B) {
	l, bd := card.NewLayout(4), midDeal()
	var pl card.Planes
	pl.Sync(bd)
	dst := make([]uint8, l.Size)
	b.ReportAllocs()
	for b.Loop() {
		l.EncodePlanes(dst, bd, &pl, 1)
	}
}
