package main

import "testing"

func TestWidenConvertsEveryByteAtAnySize(t *testing.T) {
	for _, n := range []int{0, 1, 874, 3*widenChunk + 5} {
		src := make([]uint8, n)
		for i := range src {
			src[i] = uint8(i * 7)
		}
		dst := make([]float32, n)
		widen(dst, src)
		for i, v := range src {
			if dst[i] != float32(v) {
				t.Fatalf("n=%d: dst[%d] = %v, want %d", n, i, dst[i], v)
			}
		}
	}
}

func TestParallelCopyCopiesEveryByteAtAnySize(t *testing.T) {
	for _, n := range []int{0, 1, copyChunk - 1, 5*copyChunk + 3} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(i * 13)
		}
		dst := make([]byte, n)
		parallelCopy(dst, src)
		for i := range src {
			if dst[i] != src[i] {
				t.Fatalf("n=%d: dst[%d] = %d, want %d", n, i, dst[i], src[i])
			}
		}
	}
}
