package server

import (
	"encoding/binary"
	"math"
	"strconv"
	"unsafe"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/obs"
)

// numpy dtype strings of the tensors on the wire (little-endian, C order).
const (
	dtypeU1 = "<u1"
	dtypeI1 = "<i1"
	dtypeI4 = "<i4"
	dtypeI8 = "<i8"
	dtypeF4 = "<f4"
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

// Batch field names in the order they are written.
var batchKeys = [numBatch]string{"obs", "mask", "player", "rewards", "done", "scores", "episode"}

const numBatch = 7

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
	dtypes  [numBatch]string
	shapes  [numBatch][]int
	prefix  [numBatch][]byte
	length  []string // Content-Length of a msgpack answer, as a header value
	obsF32  []float32
	scratch [numBatch][]byte
}

func newBatchEncoder(n, p, d int, obsDtype string) *batchEncoder {
	e := &batchEncoder{
		dtypes: [numBatch]string{obsDtype, dtypeU1, dtypeI1, dtypeF4, dtypeU1, dtypeI4, dtypeI8},
		shapes: [numBatch][]int{{n, d}, {n, env.NumActions}, {n}, {n, p}, {n}, {n, p}, {n}},
	}
	if obsDtype == dtypeF4 {
		e.obsF32 = make([]float32, n*d)
	}
	itemSize := [numBatch]int{1, 1, 1, 4, 1, 4, 8}
	if obsDtype == dtypeF4 {
		itemSize[0] = 4
	}
	total := 0
	for i := range numBatch {
		var b []byte
		if i == 0 {
			b = appendMapHeader(b, numBatch)
		}
		b = appendStr(b, batchKeys[i])
		b = appendMapHeader(b, 3)
		b = appendStr(b, "dtype")
		b = appendStr(b, e.dtypes[i])
		b = appendStr(b, "shape")
		b = appendArrayHeader(b, len(e.shapes[i]))
		size := itemSize[i]
		for _, s := range e.shapes[i] {
			b = appendUint(b, uint64(s))
			size *= s
		}
		b = appendStr(b, "data")
		b = appendBinHeader(b, size)
		e.prefix[i] = b
		total += len(b) + size
	}
	e.length = []string{strconv.Itoa(total)}
	return e
}

// blobs returns the seven buffers of v's last reset or step, as bytes.
func (e *batchEncoder) blobs(v *env.VecEnv) [numBatch][]byte {
	var o []byte
	if e.obsF32 != nil {
		src := v.Obs()
		dst := e.obsF32[:len(src)]
		for i, x := range src {
			dst[i] = float32(x)
		}
		o = bytesOf(dst, &e.scratch[0])
	} else {
		o = bytesOf(v.Obs(), &e.scratch[0])
	}
	return [numBatch][]byte{
		o,
		bytesOf(v.Mask(), &e.scratch[1]),
		bytesOf(v.Player(), &e.scratch[2]),
		bytesOf(v.Rewards(), &e.scratch[3]),
		bytesOf(v.Done(), &e.scratch[4]),
		bytesOf(v.Scores(), &e.scratch[5]),
		bytesOf(v.Episode(), &e.scratch[6]),
	}
}

// batchJSON is the JSON form of a batch (for debugging: base64 blobs).
type batchJSON struct {
	Obs     Tensor `json:"obs"`
	Mask    Tensor `json:"mask"`
	Player  Tensor `json:"player"`
	Rewards Tensor `json:"rewards"`
	Done    Tensor `json:"done"`
	Scores  Tensor `json:"scores"`
	Episode Tensor `json:"episode"`
}

func (e *batchEncoder) json(v *env.VecEnv) *batchJSON {
	b := e.blobs(v)
	t := func(i int) Tensor { return Tensor{Dtype: e.dtypes[i], Shape: e.shapes[i], Data: b[i]} }
	return &batchJSON{t(0), t(1), t(2), t(3), t(4), t(5), t(6)}
}

// Spec describes a session: what the create answer and GET /v1/sessions/{id} carry.
type Spec struct {
	NumEnvs      int        `json:"num_envs"`
	Players      int        `json:"players"`
	NumActions   int        `json:"num_actions"`
	LearnerSeats []int      `json:"learner_seats"`
	Opponent     string     `json:"opponent"`
	Reward       string     `json:"reward"`
	Seed         uint64     `json:"seed"`
	Game         env.Params `json:"game"`
	Obs          ObsSpec    `json:"obs"`
}

// ObsSpec describes the observation tensor.
type ObsSpec struct {
	Shape    []int         `json:"shape"`
	Dtype    string        `json:"dtype"`
	Sections []obs.Section `json:"sections"`
}

// createResponse answers POST /v1/sessions.
type createResponse struct {
	Session string   `json:"session"`
	Spec    Spec     `json:"spec"`
	Bots    []string `json:"bots"`
}

// recordResponse answers GET .../record.
type recordResponse struct {
	Finished *gameRecord `json:"finished"`
	Current  *gameRecord `json:"current"`
}

type gameRecord struct {
	Game   env.Params   `json:"game"`
	Deals  []dealRecord `json:"deals"`
	Totals []int        `json:"totals"`
}

type dealRecord struct {
	Dealer int      `json:"dealer"`
	Hands  [][]int  `json:"hands"`
	Plays  [][2]int `json:"plays"`
	// Scores is null until the deal's 15th trick is taken.
	Scores []int `json:"scores"`
	Done   bool  `json:"done"`
}

func toGameRecord(r *env.Record) *gameRecord {
	if r == nil {
		return nil
	}
	p := r.Params.Players
	g := &gameRecord{Game: r.Params, Deals: make([]dealRecord, len(r.Deals)), Totals: r.Totals()}
	for i := range r.Deals {
		d := &r.Deals[i]
		w := dealRecord{Dealer: d.Dealer, Hands: make([][]int, p), Plays: make([][2]int, d.NumPlays), Done: d.Done}
		for s := range p {
			h := make([]int, len(d.Hands[s]))
			for j, c := range d.Hands[s] {
				h[j] = int(c)
			}
			w.Hands[s] = h
		}
		for j := range d.NumPlays {
			w.Plays[j] = [2]int{int(d.Plays[j].Seat), int(d.Plays[j].Card)}
		}
		if d.Done {
			w.Scores = append([]int(nil), d.Scores[:p]...)
		}
		g.Deals[i] = w
	}
	return g
}

// actionDtypes are the integer dtypes accepted for the actions tensor, with
// their item sizes. numpy writes one-byte types as "|i1"/"|u1".
var actionDtypes = map[string]int{
	"<i1": 1, "|i1": 1, "<u1": 1, "|u1": 1,
	"<i2": 2, "<u2": 2, "<i4": 4, "<u4": 4, "<i8": 8, "<u8": 8,
}

// decodeActionBlob turns a tensor blob into actions, range-checking each.
func decodeActionBlob(dtype string, data []byte, dst []int32) *Error {
	size, ok := actionDtypes[dtype]
	if !ok {
		return Errorf(CodeBadRequest, "actions: dtype %q: want an integer dtype such as \"<i4\" or \"<i8\"", dtype)
	}
	if len(data) != len(dst)*size {
		return Errorf(CodeBadRequest, "actions: %d data bytes for %d envs of %s (want %d)", len(data), len(dst), dtype, len(dst)*size)
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
		if e := checkAction(i, v); e != nil {
			return e
		}
		dst[i] = int32(v)
	}
	return nil
}

func checkAction(i int, v int64) *Error {
	if v < 0 || v >= env.NumActions {
		e := Errorf(CodeBadRequest, "actions[%d] = %d: out of range 0..%d", i, v, env.NumActions-1)
		e.Details = map[string]any{"env": i, "action": v}
		return e
	}
	return nil
}
