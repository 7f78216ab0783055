package server

import (
	"encoding/binary"
	"fmt"
	"math"
)

// maxDepth bounds the nesting of a request body. The deepest valid request
// (a step with a tensor) nests 3 levels.
const maxDepth = 16

// scanMsgpack checks a msgpack body before any decoder sees it: it must be
// exactly one map, nested at most maxDepth deep, and every declared length
// (array and map counts, str, bin and ext sizes) must fit in the bytes that
// remain. msgpack/v5 allocates what a header declares (upstream issue 401),
// so without this a 5-byte array header could make it allocate hundreds of
// MiB. The scan is iterative (no recursion) and allocates nothing.
func scanMsgpack(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("empty msgpack body")
	}
	if c := b[0]; !(c >= 0x80 && c <= 0x8f) && c != 0xde && c != 0xdf {
		return fmt.Errorf("msgpack body: want a map at the top, got code 0x%02x", c)
	}
	// left[d] is how many values the container open at depth d still holds.
	var left [maxDepth + 1]uint64
	depth := 0
	left[0] = 1
	pos := 0
	for {
		for depth > 0 && left[depth] == 0 {
			depth--
		}
		if left[depth] == 0 {
			break
		}
		left[depth]--
		if pos >= len(b) {
			return fmt.Errorf("msgpack body truncated at byte %d", pos)
		}
		c := b[pos]
		pos++
		rest := uint64(len(b) - pos)
		var size, count uint64 // bytes to skip; values to open
		var hdr uint64         // bytes of the length field
		container := false
		switch {
		case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
			// fixint, nil, bool
		case c >= 0x80 && c <= 0x8f:
			count, container = uint64(c&0x0f)*2, true
		case c >= 0x90 && c <= 0x9f:
			count, container = uint64(c&0x0f), true
		case c >= 0xa0 && c <= 0xbf:
			size = uint64(c & 0x1f)
		case c == 0xcc || c == 0xd0:
			size = 1
		case c == 0xcd || c == 0xd1:
			size = 2
		case c == 0xce || c == 0xd2 || c == 0xca:
			size = 4
		case c == 0xcf || c == 0xd3 || c == 0xcb:
			size = 8
		case c == 0xd4, c == 0xd5, c == 0xd6, c == 0xd7, c == 0xd8:
			size = 1 + 1<<(c-0xd4) // type byte + 1, 2, 4, 8, 16 data bytes
		case c == 0xc4 || c == 0xd9: // bin8, str8
			hdr = 1
		case c == 0xc5 || c == 0xda: // bin16, str16
			hdr = 2
		case c == 0xc6 || c == 0xdb: // bin32, str32
			hdr = 4
		case c == 0xc7 || c == 0xc8 || c == 0xc9: // ext8/16/32: length then type byte
			hdr = 1 << (c - 0xc7)
		case c == 0xdc || c == 0xde: // array16, map16
			hdr, container = 2, true
		case c == 0xdd || c == 0xdf: // array32, map32
			hdr, container = 4, true
		default:
			return fmt.Errorf("msgpack body: invalid code 0x%02x at byte %d", c, pos-1)
		}
		if hdr > 0 {
			if hdr > rest {
				return fmt.Errorf("msgpack body truncated at byte %d", pos)
			}
			var n uint64
			switch hdr {
			case 1:
				n = uint64(b[pos])
			case 2:
				n = uint64(binary.BigEndian.Uint16(b[pos:]))
			case 4:
				n = uint64(binary.BigEndian.Uint32(b[pos:]))
			}
			pos += int(hdr)
			rest -= hdr
			switch {
			case container && (c == 0xde || c == 0xdf):
				count = n * 2
			case container:
				count = n
			case c >= 0xc7 && c <= 0xc9:
				size = n + 1
			default:
				size = n
			}
		}
		if container {
			// Every value takes at least one byte.
			if count > rest {
				return fmt.Errorf("msgpack body: container at byte %d declares %d values but only %d bytes remain", pos-1-int(hdr), count, rest)
			}
			if count > 0 {
				if depth == maxDepth {
					return fmt.Errorf("msgpack body nested deeper than %d", maxDepth)
				}
				depth++
				left[depth] = count
			}
			continue
		}
		if size > rest {
			return fmt.Errorf("msgpack body: value at byte %d declares %d bytes but only %d remain", pos-1-int(hdr), size, rest)
		}
		pos += int(size)
	}
	if pos != len(b) {
		return fmt.Errorf("msgpack body: %d bytes after the value", len(b)-pos)
	}
	return nil
}

// Small msgpack writers for the fixed parts of a batch answer.

func appendStr(b []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n < 256:
		b = append(b, 0xd9, byte(n))
	default:
		b = append(b, 0xda, byte(n>>8), byte(n))
	}
	return append(b, s...)
}

func appendUint(b []byte, v uint64) []byte {
	switch {
	case v < 128:
		return append(b, byte(v))
	case v <= math.MaxUint8:
		return append(b, 0xcc, byte(v))
	case v <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(v))
	case v <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xcf), v)
}

func appendArrayHeader(b []byte, n int) []byte {
	if n < 16 {
		return append(b, 0x90|byte(n))
	}
	return binary.BigEndian.AppendUint32(append(b, 0xdd), uint32(n))
}

func appendMapHeader(b []byte, n int) []byte {
	if n < 16 {
		return append(b, 0x80|byte(n))
	}
	return binary.BigEndian.AppendUint32(append(b, 0xdf), uint32(n))
}

func appendBinHeader(b []byte, n int) []byte {
	return binary.BigEndian.AppendUint32(append(b, 0xc6), uint32(n))
}
