package card_test

import (
	"fmt"
	"math/bits"
	"slices"
	"testing"

	"github.com/davidgoliath/dgenv/env/card"
	"github.com/davidgoliath/dgenv/obs"
)

func TestLayout(t *testing.T) {
	for p := card.MinPlayers; p <= card.MaxPlayers; p++ {
		t.Run(fmt.Sprintf("%d players: sections tile the tensor and the required ones have their shapes", p), func(t *testing.T) {
			l := card.NewLayout(p)
			if l.Players != p {
				t.Errorf("Players = %d, want %d", l.Players, p)
			}
			off := 0
			seen := map[string]bool{}
			for _, s := range l.Sections {
				if s.Offset != off {
					t.Errorf("section %s at offset %d, want %d (sections must be contiguous)", s.Name, s.Offset, off)
				}
				if seen[s.Name] {
					t.Errorf("section %s appears twice", s.Name)
				}
				seen[s.Name] = true
				if s.Min < 0 || s.Min > s.Max || s.Max > 255 {
					t.Errorf("section %s range %d..%d, want within 0..255", s.Name, s.Min, s.Max)
				}
				if s.Doc == "" {
					t.Errorf("section %s has no doc", s.Name)
				}
				off += s.Size()
			}
			if off != l.Size {
				t.Errorf("sections add up to %d, Size = %d", off, l.Size)
			}
			// 90 + 5 + 3 + P*(90 + 5 + 90 + 5 + 1 + 1 + 2), as NewLayout's comment sums it.
			if want := 98 + 194*p; l.Size != want {
				t.Errorf("Size = %d, want %d", l.Size, want)
			}
			required := []struct {
				name  string
				shape []int
				max   int
			}{
				{"hand", []int{90}, 1},
				{"current_trick", []int{p, 90}, 1},
				{"prize_counts", []int{p, 5}, 3 * p},
			}
			for _, r := range required {
				s, ok := l.Section(r.name)
				if !ok {
					t.Errorf("Section(%q) missing", r.name)
					continue
				}
				if !slices.Equal(s.Shape, r.shape) || s.Min != 0 || s.Max != r.max {
					t.Errorf("Section(%q) shape %v range %d..%d, want %v 0..%d", r.name, s.Shape, s.Min, s.Max, r.shape, r.max)
				}
			}
			if _, ok := l.Section("no_such_section"); ok {
				t.Errorf("Section(no_such_section) found, want missing")
			}
		})
	}
	if card.NumCards != 90 || card.NumColours != 5 || card.MaxValue != 18 || card.HandSize != 15 {
		t.Errorf("NumCards %d NumColours %d MaxValue %d HandSize %d, want 90 5 18 15", card.NumCards, card.NumColours, card.MaxValue, card.HandSize)
	}
}

func cardID(colour, value int) uint8 { return uint8(colour*card.MaxValue + value - 1) }

// sec returns the named section's slice of an encoded tensor.
func sec(tb testing.TB, l *card.Layout, o []uint8, name string) []uint8 {
	tb.Helper()
	s, ok := l.Section(name)
	if !ok {
		tb.Fatalf("no section %q", name)
	}
	return o[s.Offset : s.Offset+s.Size()]
}

func TestEncodeRotatesSeats(t *testing.T) {
	// Four seats; seat 2 led green 5, seat 3 followed with green 9.
	var b card.Board
	b.Players, b.Deals, b.Deal, b.TricksDone = 4, 4, 1, 6
	b.Leader, b.TrickLen = 2, 2
	b.Trick[0], b.Trick[1] = cardID(2, 5), cardID(2, 9)
	b.Hands[0][0] = 1<<0 | 1<<11 // red 1, red 12
	b.Hands[1][4] = 1 << 2       // purple 3
	b.Prizes[3][1] = 1<<3 | 1<<4 | 1<<5
	b.Voids[1] = 1 << 2
	b.Totals[3] = 130
	l := card.NewLayout(4)
	o := make([]uint8, l.Size)
	tests := []struct {
		seat                 int
		trickRows            [2]int // rows of the leader's and the follower's card
		prizeRow, voidRow    int
		leaderRow, totalsRow int
	}{
		{0, [2]int{2, 3}, 3, 1, 2, 3},
		{1, [2]int{1, 2}, 2, 0, 1, 2},
		{3, [2]int{3, 0}, 0, 2, 3, 0},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("seat %d sees every seat rotated to its own view", tc.seat), func(t *testing.T) {
			for i := range o {
				o[i] = 0xEE // Encode must clear the buffer first
			}
			l.Encode(o, &b, tc.seat)
			hand := sec(t, &l, o, "hand")
			for id, v := range hand {
				want := uint8(b.Hands[tc.seat][id/18] >> (id % 18) & 1)
				if v != want {
					t.Fatalf("hand[%d] = %d, want %d", id, v, want)
				}
			}
			trick := sec(t, &l, o, "current_trick")
			want := make([]uint8, 4*90)
			want[tc.trickRows[0]*90+int(cardID(2, 5))] = 1
			want[tc.trickRows[1]*90+int(cardID(2, 9))] = 1
			if !slices.Equal(trick, want) {
				t.Errorf("current_trick rows with a 1: %v, want rows %v", rowsSet(trick, 90), tc.trickRows)
			}
			counts := sec(t, &l, o, "prize_counts")
			wantCounts := make([]uint8, 4*5)
			wantCounts[tc.prizeRow*5+1] = 3
			if !slices.Equal(counts, wantCounts) {
				t.Errorf("prize_counts = %v, want %v", counts, wantCounts)
			}
			voids := sec(t, &l, o, "voids")
			wantVoids := make([]uint8, 4*5)
			wantVoids[tc.voidRow*5+2] = 1
			if !slices.Equal(voids, wantVoids) {
				t.Errorf("voids = %v, want %v", voids, wantVoids)
			}
			if got := sec(t, &l, o, "leader"); got[tc.leaderRow] != 1 || sum(got) != 1 {
				t.Errorf("leader = %v, want one-hot at %d", got, tc.leaderRow)
			}
			totals := sec(t, &l, o, "totals")
			if totals[2*tc.totalsRow] != 2 || totals[2*tc.totalsRow+1] != 2 || sum(totals) != 4 {
				t.Errorf("totals = %v, want [2 2] (130 = 2*64+2) in row %d", totals, tc.totalsRow)
			}
			if got := sec(t, &l, o, "lead_colour"); !slices.Equal(got, []uint8{0, 0, 1, 0, 0}) {
				t.Errorf("lead_colour = %v, want green", got)
			}
			if got := sec(t, &l, o, "trick_position"); !slices.Equal(got, []uint8{0, 0, 1, 0}) {
				t.Errorf("trick_position = %v, want one-hot at 2", got)
			}
			if tl, di, dl := sec(t, &l, o, "tricks_left")[0], sec(t, &l, o, "deal_index")[0], sec(t, &l, o, "deals_left")[0]; tl != 9 || di != 1 || dl != 2 {
				t.Errorf("tricks_left, deal_index, deals_left = %d, %d, %d, want 9, 1, 2", tl, di, dl)
			}
		})
	}
	t.Run("Encode allocates nothing", func(t *testing.T) {
		if n := testing.AllocsPerRun(100, func() { l.Encode(o, &b, 1) }); n != 0 {
			t.Errorf("Encode allocates %v times, want 0", n)
		}
	})
}

func rowsSet(x []uint8, width int) []int {
	var rows []int
	for i, v := range x {
		if v != 0 {
			rows = append(rows, i/width)
		}
	}
	return rows
}

func sum(x []uint8) int {
	s := 0
	for _, v := range x {
		s += int(v)
	}
	return s
}

// boardFrom builds a well-formed Board (what the engine can produce: cards
// within the deck, a partial trick, seats in range) from fuzz bytes.
func boardFrom(data []byte) card.Board {
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	word := func() uint32 {
		return uint32(next()) | uint32(next())<<8 | uint32(next())<<16
	}
	var b card.Board
	p := card.MinPlayers + int(next())%4
	b.Players = uint8(p)
	deck := uint32(1)<<(3*p) - 1
	for s := range p {
		for c := range card.NumColours {
			b.Hands[s][c] = word() & deck
			b.Prizes[s][c] = word() & deck &^ b.Hands[s][c]
		}
		b.Voids[s] = next() & 31
		b.Totals[s] = int32(word() % 16000)
	}
	b.TrickLen = next() % uint8(p)
	b.Leader = next() % uint8(p)
	for i := range int(b.TrickLen) {
		v := int(next())%(3*p) + 1
		b.Trick[i] = cardID(int(next())%card.NumColours, v)
	}
	b.Deals = 1 + next()%90
	b.Deal = next() % b.Deals
	b.TricksDone = next() % 16
	return b
}

func FuzzEncode(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte("a table of six with a long trick and high totals: 0123456789abcdefghijklmnopqrstuvwxyz"))
	f.Add(slices.Repeat([]byte{0xFF}, 400))
	f.Add(slices.Repeat([]byte{3, 7, 200, 1}, 100))
	f.Fuzz(func(t *testing.T, data []byte) {
		b := boardFrom(data)
		p := int(b.Players)
		l := card.NewLayout(p)
		o := make([]uint8, l.Size+7)
		for i := range o {
			o[i] = 0x5A
		}
		for seat := range p {
			l.Encode(o, &b, seat)
			for i := l.Size; i < len(o); i++ {
				if o[i] != 0x5A {
					t.Fatalf("Encode wrote past Size at %d", i)
				}
			}
			for _, s := range l.Sections {
				for i, v := range o[s.Offset : s.Offset+s.Size()] {
					if int(v) < s.Min || int(v) > s.Max {
						t.Fatalf("seat %d: %s[%d] = %d, outside %d..%d", seat, s.Name, i, v, s.Min, s.Max)
					}
				}
			}
			// The packed form (bits and extra bytes) gives it back exactly.
			pk := l.Packing()
			bitsOut, extra, back := make([]uint8, pk.Bytes), make([]uint8, pk.ExtraBytes), make([]uint8, l.Size)
			obs.PackBits(bitsOut, o[:l.Size])
			pk.PackExtra(extra, o[:l.Size])
			pk.Unpack(back, bitsOut, extra)
			if !slices.Equal(back, o[:l.Size]) {
				t.Fatalf("seat %d: packing does not round-trip", seat)
			}
			checkEncodeBits(t, &l, &b, seat, o[:l.Size])
			// Decode the per-seat sections and compare with the board.
			hand, trick, counts := sec(t, &l, o, "hand"), sec(t, &l, o, "current_trick"), sec(t, &l, o, "prize_counts")
			for id := range card.NumCards {
				if hand[id] != uint8(b.Hands[seat][id/18]>>(id%18)&1) {
					t.Fatalf("seat %d: hand[%d] = %d", seat, id, hand[id])
				}
			}
			for j := range p {
				abs := (seat + j) % p
				for c := range card.NumColours {
					if int(counts[j*5+c]) != bits.OnesCount32(b.Prizes[abs][c]) {
						t.Fatalf("seat %d: prize_counts[%d][%d] = %d, want %d", seat, j, c, counts[j*5+c], bits.OnesCount32(b.Prizes[abs][c]))
					}
				}
				var row []uint8
				pos := (abs - int(b.Leader) + p) % p
				row = trick[j*90 : (j+1)*90]
				if pos < int(b.TrickLen) {
					if sum(row) != 1 || row[b.Trick[pos]] != 1 {
						t.Fatalf("seat %d: current_trick row %d does not hold %d", seat, j, b.Trick[pos])
					}
				} else if sum(row) != 0 {
					t.Fatalf("seat %d: current_trick row %d = a card, want none (seat %d has not played)", seat, j, abs)
				}
			}
		}
	})
}
