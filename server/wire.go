package server

import (
	"encoding/base64"
	"encoding/binary"
	"io"
	"math"
	"net/http"
	"strconv"
	"unsafe"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/obs"
	"github.com/davidgoliath/dgenv/server/wire"
)

// numpy dtype strings of the tensors on the wire (little-endian, C order).
const (
	dtypeU1 = env.ObsU1
	dtypeI1 = "<i1"
	dtypeI4 = "<i4"
	dtypeI8 = "<i8"
	dtypeF4 = env.ObsF4
)

// littleEndian is true on the machines the server is meant for. There the
// engine's buffers are sent as they lie in memory; elsewhere each buffer is
// converted into a scratch slice first.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// Tensor is how every array travels: numpy dtype, shape, one blob (base64 in JSON).
type Tensor struct {
	Dtype string `json:"dtype"`
	Shape []int  `json:"shape"`
	Data  []byte `json:"data"`
}

// maxBatch is the most tensors a reset/step answer carries: obs, mask,
// player, rewards, done, scores, episode; packed sessions send obs as
// obs_bits and obs_extra and mask as mask_bits.
const maxBatch = 8

// Packing modes of a session's answers.
const (
	packingNone = wire.PackingNone
	packingBits = wire.PackingBits
)

// bytesOf returns the memory of s as bytes in little-endian order: the very
// buffer on little-endian machines (no copy), else a little-endian copy of
// each element in *scratch.
func bytesOf[T int8 | uint8 | int32 | int64 | float32](s []T, scratch *[]byte) []byte {
	if len(s) == 0 {
		return nil
	}
	size := int(unsafe.Sizeof(s[0]))
	if littleEndian || size == 1 {
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*size)
	}
	if cap(*scratch) < len(s)*size {
		*scratch = make([]byte, len(s)*size)
	}
	out := (*scratch)[:len(s)*size]
	switch x := any(s).(type) {
	case []int32:
		for i, v := range x {
			binary.LittleEndian.PutUint32(out[4*i:], uint32(v))
		}
	case []float32:
		for i, v := range x {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
		}
	case []int64:
		for i, v := range x {
			binary.LittleEndian.PutUint64(out[8*i:], uint64(v))
		}
	}
	return out
}

// batchEncoder writes a reset/step answer. Shapes never change within a
// session, so the msgpack bytes around the blobs are built once; an answer
// is then those prefixes with the engine's buffers written out between them.
type batchEncoder struct {
	n       int // tensors in an answer
	packed  bool
	keys    [maxBatch]string
	dtypes  [maxBatch]string
	shapes  [maxBatch][]int
	prefix  [maxBatch][]byte
	length  []string // Content-Length of a msgpack answer, as a header value
	obsF32  []float32
	scratch [maxBatch][]byte
	tail    [len(seqKey) + 9]byte // "seq" and its value as a msgpack int64, after the tensors
	// The JSON form: before each tensor's base64 data, its key, dtype and
	// shape; the bytes of the JSON answer but for seq's digits.
	jsonPrefix [maxBatch][]byte
	jsonLength int
}

// jsonSeqKey and jsonEnd frame the JSON answer's last field.
const (
	jsonSeqKey = `,"seq":`
	jsonEnd    = "}\n"
)

// seqKey is the msgpack string "seq": the last key of every batch answer.
const seqKey = "\xa3seq"

// seqTail returns the msgpack bytes that end a batch answer: the key "seq"
// and seq as an int64 (always 9 bytes, so the answer's length is fixed).
func (e *batchEncoder) seqTail(seq int64) []byte {
	copy(e.tail[:], seqKey)
	e.tail[len(seqKey)] = 0xd3
	binary.BigEndian.PutUint64(e.tail[len(seqKey)+1:], uint64(seq))
	return e.tail[:]
}

// newBatchEncoder lays out the answers of a session of n envs, p players and
// observations of d elements: obs as obsDtype, or packed as pk describes
// (pk != nil: obs_bits, obs_extra and mask_bits replace obs and mask).
func newBatchEncoder(n, p, d, numActions int, obsDtype string, pk *obs.Packing) *batchEncoder {
	e := &batchEncoder{}
	type tensor struct {
		key, dtype string
		item       int
		shape      []int
	}
	var ts []tensor
	if pk != nil {
		e.packed = true
		ts = append(ts,
			tensor{"obs_bits", dtypeU1, 1, []int{n, pk.Bytes}},
			tensor{"obs_extra", dtypeU1, 1, []int{n, pk.ExtraBytes}},
			tensor{"mask_bits", dtypeU1, 1, []int{n, obs.PackedLen(numActions)}})
	} else {
		item := 1
		if obsDtype == dtypeF4 {
			item = 4
			e.obsF32 = make([]float32, n*d)
		}
		ts = append(ts,
			tensor{"obs", obsDtype, item, []int{n, d}},
			tensor{"mask", dtypeU1, 1, []int{n, numActions}})
	}
	ts = append(ts,
		tensor{"player", dtypeI1, 1, []int{n}},
		tensor{"rewards", dtypeF4, 4, []int{n, p}},
		tensor{"done", dtypeU1, 1, []int{n}},
		tensor{"scores", dtypeI4, 4, []int{n, p}},
		tensor{"episode", dtypeI8, 8, []int{n}})
	total := 0
	for i, t := range ts {
		e.keys[i], e.dtypes[i], e.shapes[i] = t.key, t.dtype, t.shape
		var b []byte
		if i == 0 {
			b = appendMapHeader(b, len(ts)+1) // the tensors, then "seq"
		}
		b = appendStr(b, t.key)
		b = appendMapHeader(b, 3)
		b = appendStr(b, "dtype")
		b = appendStr(b, t.dtype)
		b = appendStr(b, "shape")
		b = appendArrayHeader(b, len(t.shape))
		size := t.item
		for _, s := range t.shape {
			b = appendUint(b, uint64(s))
			size *= s
		}
		b = appendStr(b, "data")
		b = appendBinHeader(b, size)
		e.prefix[i] = b
		total += len(b) + size
		j := []byte(`,"`)
		if i == 0 {
			j = []byte(`{"`)
		}
		j = append(j, t.key...)
		j = append(j, `":{"dtype":"`...)
		j = append(j, t.dtype...)
		j = append(j, `","shape":[`...)
		for k, s := range t.shape {
			if k > 0 {
				j = append(j, ',')
			}
			j = strconv.AppendInt(j, int64(s), 10)
		}
		j = append(j, `],"data":"`...)
		e.jsonPrefix[i] = j
		e.jsonLength += len(j) + base64.StdEncoding.EncodedLen(size) + len(`"}`)
	}
	e.jsonLength += len(jsonSeqKey) + len(jsonEnd)
	e.n = len(ts)
	total += len(e.tail)
	e.length = []string{strconv.Itoa(total)}
	return e
}

// blobs returns the buffers of v's last reset or step, as bytes, in the
// order of e.keys (the first e.n are set).
func (e *batchEncoder) blobs(v env.Vec) [maxBatch][]byte {
	var out [maxBatch][]byte
	k := 0
	switch {
	case e.packed:
		out[0], out[1], out[2] = v.ObsBits(), v.ObsExtra(), v.MaskBits()
		k = 3
	case e.obsF32 != nil:
		src := v.Obs()
		dst := e.obsF32[:len(src)]
		for i, x := range src {
			dst[i] = float32(x)
		}
		out[0], out[1] = bytesOf(dst, &e.scratch[0]), v.Mask()
		k = 2
	default:
		out[0], out[1] = v.Obs(), v.Mask()
		k = 2
	}
	out[k] = bytesOf(v.Player(), &e.scratch[k])
	out[k+1] = bytesOf(v.Rewards(), &e.scratch[k+1])
	out[k+2] = bytesOf(v.Done(), &e.scratch[k+2])
	out[k+3] = bytesOf(v.Scores(), &e.scratch[k+3])
	out[k+4] = bytesOf(v.Episode(), &e.scratch[k+4])
	return out
}

// writeJSON writes the JSON form of a batch (base64 blobs), keyed as in
// msgpack, straight from the engine's buffers: the base64 is encoded as it
// is written, so a JSON answer costs no more memory than a msgpack one.
func (e *batchEncoder) writeJSON(w http.ResponseWriter, v env.Vec, seq int64) {
	digits := strconv.AppendInt(nil, seq, 10)
	h := w.Header()
	h["Content-Type"] = ctJSON
	h["Content-Length"] = []string{strconv.Itoa(e.jsonLength + len(digits))}
	w.WriteHeader(http.StatusOK)
	blobs := e.blobs(v)
	for i := range e.n {
		if _, err := w.Write(e.jsonPrefix[i]); err != nil {
			return // the client went away; nothing to tell it
		}
		b64 := base64.NewEncoder(base64.StdEncoding, w)
		if _, err := b64.Write(blobs[i]); err != nil {
			return
		}
		if err := b64.Close(); err != nil {
			return
		}
		if _, err := io.WriteString(w, `"}`); err != nil {
			return
		}
	}
	_, _ = io.WriteString(w, jsonSeqKey)
	_, _ = w.Write(digits)
	_, _ = io.WriteString(w, jsonEnd)
}

// The session's wire types live in package wire (shared with cmd/libdgenv
// and cmd/dgbench); these names keep the server's code short.
type (
	Spec       = wire.Spec
	ObsSpec    = wire.ObsSpec
	PackedSpec = wire.PackedSpec
	GameSpec   = wire.GameSpec
	Section    = wire.Section
	Span       = wire.Span
	gameRecord = wire.Record
)

var (
	gameSpec     = wire.GameOf
	toSections   = wire.Sections
	toSpans      = wire.Spans
	toGameRecord = wire.RecordOf
)

// createResponse answers POST /v1/sessions and GET /v1/sessions/{id}.
type createResponse struct {
	Session string   `json:"session"`
	Spec    Spec     `json:"spec"`
	Bots    []string `json:"bots"`
	// Seq is the number of batches the session has answered (0 until the
	// first reset or step).
	Seq int64 `json:"seq"`
}

// recordResponse answers GET .../record.
type recordResponse struct {
	Finished *gameRecord `json:"finished"`
	Current  *gameRecord `json:"current"`
}

// actionDtypes are the integer dtypes accepted for the actions tensor, with
// their item sizes. numpy writes one-byte types as "|i1"/"|u1".
var actionDtypes = map[string]int{
	"<i1": 1, "|i1": 1, "<u1": 1, "|u1": 1,
	"<i2": 2, "<u2": 2, "<i4": 4, "<u4": 4, "<i8": 8, "<u8": 8,
}

// decodeActionBlob turns a tensor blob into actions, range-checking each.
func decodeActionBlob(dtype string, data []byte, dst []int32, numActions int) *env.Error {
	size, ok := actionDtypes[dtype]
	if !ok {
		return env.Errorf(env.CodeBadRequest, "actions: dtype %q: want an integer dtype such as \"<i4\" or \"<i8\"", dtype)
	}
	if len(data) != len(dst)*size {
		return env.Errorf(env.CodeBadRequest, "actions: %d data bytes for %d envs of %s (want %d)", len(data), len(dst), dtype, len(dst)*size)
	}
	signed := dtype[1] == 'i'
	for i := range dst {
		var v int64
		b := data[i*size:]
		switch size {
		case 1:
			if signed {
				v = int64(int8(b[0]))
			} else {
				v = int64(b[0])
			}
		case 2:
			u := binary.LittleEndian.Uint16(b)
			if signed {
				v = int64(int16(u))
			} else {
				v = int64(u)
			}
		case 4:
			u := binary.LittleEndian.Uint32(b)
			if signed {
				v = int64(int32(u))
			} else {
				v = int64(u)
			}
		case 8:
			u := binary.LittleEndian.Uint64(b)
			if !signed && u > math.MaxInt64 {
				u = math.MaxInt64
			}
			v = int64(u)
		}
		if e := checkAction(i, v, numActions); e != nil {
			return e
		}
		dst[i] = int32(v)
	}
	return nil
}

func checkAction(i int, v int64, numActions int) *env.Error {
	if (v < 0 || v >= int64(numActions)) && v != env.Skip {
		e := env.Errorf(env.CodeBadRequest, "actions[%d] = %d: out of range 0..%d (or %d: skip this env)", i, v, numActions-1, env.Skip)
		e.Details = map[string]any{"env": i, "action": v}
		return e
	}
	return nil
}
