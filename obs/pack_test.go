package obs_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/obs"
)

func TestPackBitsMatchesAPlainLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pick := []func() uint8{
		func() uint8 { return 0 },
		func() uint8 { return 1 },
		func() uint8 { return 0x80 },
		func() uint8 { return 0x7f },
		func() uint8 { return uint8(r.IntN(256)) },
	}
	for n := range 201 {
		for trial := range 20 {
			src := make([]uint8, n)
			for i := range src {
				if trial%2 == 0 || r.IntN(3) == 0 {
					src[i] = pick[r.IntN(len(pick))]()
				}
			}
			want := make([]uint8, obs.PackedLen(n))
			for i, v := range src {
				want[i/8] |= (v & 1) << (i % 8)
			}
			got := make([]uint8, obs.PackedLen(n)+3)
			for i := range got {
				got[i] = 0xA5
			}
			obs.PackBits(got, src)
			require.Equal(t, want, got[:len(want)], "n=%d src=%v", n, src)
			assert.Equal(t, []uint8{0xA5, 0xA5, 0xA5}, got[len(want):], "wrote past PackedLen(%d)", n)
		}
	}
}

func TestUnpackBitsInvertsPackBits(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for n := range 150 {
		src := make([]uint8, n)
		for i := range src {
			src[i] = uint8(r.IntN(2))
		}
		bits := make([]uint8, obs.PackedLen(n))
		obs.PackBits(bits, src)
		back := make([]uint8, n+2)
		back[n], back[n+1] = 7, 7
		obs.UnpackBits(back[:n], bits)
		require.Equal(t, src, back[:n], "n=%d", n)
		require.Equal(t, []uint8{7, 7}, back[n:], "wrote past n=%d", n)
	}
}
