// Package policy runs trained David & Goliath policies exported to ONNX, in
// pure Go, so that the server and the evaluator can use them as bots.
//
// Why a small interpreter of our own rather than onnxruntime or a general Go
// ONNX library: the exported policies are multilayer perceptrons (Gemm or
// MatMul, Add, Mul, Relu, Tanh; Gather for the views of a colour-averaged
// policy; Greater and Where to play one policy on leads and another on
// later cards), which a few hundred lines run exactly and fast, `go build` stays
// free of cgo and shared libraries, and anything outside that set is
// refused with an error naming it instead of being half-supported.
// Observations are mostly zeros (a hand, a trick and prize piles over 90
// card ids), so matrix products skip zero inputs.
//
// The file format ("dgenv policy v1", written by python -m dgenv.export):
//   - one input "obs": float32 [batch, D], the uint8 observation as floats;
//   - one output "logits": float32 [batch, 90], unmasked;
//   - metadata_props "dgenv.format" = "policy-v1", "dgenv.game" (JSON game
//     parameters), "dgenv.obs_layout" (JSON [{name, offset, shape}]),
//     "dgenv.obs_size", "dgenv.num_actions"; optionally
//     "dgenv.description" and "dgenv.logit_scale" (Meta.LogitScale);
//   - float32 initializers, except Gather's indices (1-D int32 or int64,
//     axis 1); an initializer several nodes use is compiled once;
//   - a Greater compares a value with a float32 constant, and only a
//     Where's condition reads its result; a Where whose condition is one
//     value a row computes only the branch it takes (forward).
//
// A forward pass computes the values the logits need, from the logits
// back, each once: a node nothing needs is never run.
//
// The package does no I/O: callers hand it bytes or an fs.FS.
package policy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// ErrBadModel is wrapped by every error about a model file.
var ErrBadModel = errors.New("bad policy model")

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadModel, fmt.Sprintf(format, args...))
}

// Field numbers of onnx.proto used here.
const (
	modelGraph    = 7
	modelMetadata = 14

	graphNode        = 1
	graphInitializer = 5
	graphInput       = 11
	graphOutput      = 12
	graphSparseInit  = 15

	nodeInput  = 1
	nodeOutput = 2
	nodeOpType = 4
	nodeAttr   = 5
	nodeDomain = 7

	attrName  = 1
	attrFloat = 2
	attrInt   = 3

	tensorDims     = 1
	tensorDataType = 2
	tensorFloats   = 4
	tensorInt32s   = 5
	tensorInt64s   = 7
	tensorName     = 8
	tensorRaw      = 9
	tensorExternal = 13
	tensorLocation = 14

	valueName = 1
	valueType = 2

	tensorFloat32 = 1
	tensorInt32   = 6
	tensorInt64   = 7
)

type rawTensor struct {
	name string
	dims []int64
	data []float32
	// ints holds an int32 or int64 tensor's values (Gather's indices); data
	// is then nil, and isInt is set.
	ints  []int64
	isInt bool
}

type rawNode struct {
	op      string
	domain  string
	inputs  []string
	outputs []string
	floats  map[string]float32
	ints    map[string]int64
}

type rawModel struct {
	meta    map[string]string
	nodes   []rawNode
	inits   map[string]rawTensor
	inputs  []valueInfo
	outputs []valueInfo
}

type valueInfo struct {
	name string
	dims []int64 // -1 for a symbolic dimension
}

// field walks the fields of one protobuf message.
func fields(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return bad("malformed protobuf: %v", protowire.ParseError(n))
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var y uint32
			y, n = protowire.ConsumeFixed32(b)
			x = uint64(y)
		case protowire.Fixed64Type:
			x, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return bad("malformed protobuf: %v", protowire.ParseError(n))
		}
		b = b[n:]
		if err := f(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}

func parseModel(data []byte) (*rawModel, error) {
	m := &rawModel{meta: map[string]string{}, inits: map[string]rawTensor{}}
	var graph []byte
	err := fields(data, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		switch {
		case num == modelGraph && typ == protowire.BytesType:
			graph = v
		case num == modelMetadata && typ == protowire.BytesType:
			var k, val string
			if err := fields(v, func(n protowire.Number, t protowire.Type, s []byte, _ uint64) error {
				if t == protowire.BytesType {
					switch n {
					case 1:
						k = string(s)
					case 2:
						val = string(s)
					}
				}
				return nil
			}); err != nil {
				return err
			}
			m.meta[k] = val
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if graph == nil {
		return nil, bad("no graph (is this an ONNX model?)")
	}
	err = fields(graph, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case graphNode:
			n, err := parseNode(v)
			if err != nil {
				return err
			}
			m.nodes = append(m.nodes, n)
		case graphInitializer:
			t, err := parseTensor(v)
			if err != nil {
				return err
			}
			m.inits[t.name] = t
		case graphSparseInit:
			return bad("sparse initializers are not supported")
		case graphInput, graphOutput:
			vi, err := parseValueInfo(v)
			if err != nil {
				return err
			}
			if num == graphInput {
				m.inputs = append(m.inputs, vi)
			} else {
				m.outputs = append(m.outputs, vi)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

func parseNode(b []byte) (rawNode, error) {
	n := rawNode{floats: map[string]float32{}, ints: map[string]int64{}}
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case nodeInput:
			n.inputs = append(n.inputs, string(v))
		case nodeOutput:
			n.outputs = append(n.outputs, string(v))
		case nodeOpType:
			n.op = string(v)
		case nodeDomain:
			n.domain = string(v)
		case nodeAttr:
			var name string
			var f *float32
			var i *int64
			if err := fields(v, func(an protowire.Number, at protowire.Type, s []byte, x uint64) error {
				switch {
				case an == attrName && at == protowire.BytesType:
					name = string(s)
				case an == attrFloat && at == protowire.Fixed32Type:
					y := math.Float32frombits(uint32(x))
					f = &y
				case an == attrInt && at == protowire.VarintType:
					y := int64(x)
					i = &y
				}
				return nil
			}); err != nil {
				return err
			}
			if f != nil {
				n.floats[name] = *f
			}
			if i != nil {
				n.ints[name] = *i
			}
		}
		return nil
	})
	return n, err
}

// maxElements bounds one tensor (64 Mi floats): a policy is a few MB.
const maxElements = 1 << 26

func parseTensor(b []byte) (rawTensor, error) {
	var t rawTensor
	dtype := int64(-1)
	var raw []byte
	var floats []float32
	var ints []int64
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch num {
		case tensorDims:
			if typ == protowire.VarintType {
				t.dims = append(t.dims, int64(x))
				return nil
			}
			for len(v) > 0 { // packed
				d, n := protowire.ConsumeVarint(v)
				if n < 0 {
					return bad("malformed tensor dims")
				}
				t.dims = append(t.dims, int64(d))
				v = v[n:]
			}
		case tensorDataType:
			dtype = int64(x)
		case tensorName:
			t.name = string(v)
		case tensorRaw:
			raw = v
		case tensorFloats:
			if typ == protowire.Fixed32Type {
				floats = append(floats, math.Float32frombits(uint32(x)))
				return nil
			}
			if len(v)%4 != 0 {
				return bad("malformed float_data")
			}
			for i := 0; i < len(v); i += 4 {
				floats = append(floats, math.Float32frombits(binary.LittleEndian.Uint32(v[i:])))
			}
		case tensorInt32s, tensorInt64s:
			if typ == protowire.VarintType {
				ints = append(ints, varintValue(num, x))
				return nil
			}
			for len(v) > 0 { // packed
				d, n := protowire.ConsumeVarint(v)
				if n < 0 {
					return bad("malformed tensor int data")
				}
				ints = append(ints, varintValue(num, d))
				v = v[n:]
			}
		case tensorExternal, tensorLocation:
			if num == tensorExternal || x != 0 {
				return bad("tensor %q: external data is not supported (save the model as one file)", t.name)
			}
		}
		return nil
	})
	if err != nil {
		return t, err
	}
	width := int64(4)
	switch dtype {
	case tensorFloat32:
	case tensorInt32, tensorInt64:
		t.isInt = true
		if dtype == tensorInt64 {
			width = 8
		}
	default:
		return t, bad("tensor %q: data type %d, only float32 (1), and int32 (6) or int64 (7) for Gather's indices, are supported", t.name, dtype)
	}
	size := int64(1)
	for _, d := range t.dims {
		if d < 0 || d > maxElements {
			return t, bad("tensor %q: dimension %d out of range", t.name, d)
		}
		size *= d
		if size > maxElements {
			return t, bad("tensor %q: too large", t.name)
		}
	}
	if t.isInt {
		// Indices are at most a row wide (a Gather's output is a row): a
		// varint takes a byte, its value 8, so a larger count would let a
		// small file hold much memory.
		if size > MaxScratch {
			return t, bad("tensor %q: %d integers, at most %d", t.name, size, MaxScratch)
		}
		switch {
		case raw != nil:
			if int64(len(raw)) != width*size {
				return t, bad("tensor %q: %d raw bytes for %d integers of %d bytes", t.name, len(raw), size, width)
			}
			t.ints = make([]int64, size)
			for i := range t.ints {
				if width == 8 {
					t.ints[i] = int64(binary.LittleEndian.Uint64(raw[8*i:]))
				} else {
					t.ints[i] = int64(int32(binary.LittleEndian.Uint32(raw[4*i:])))
				}
			}
		case int64(len(ints)) == size:
			t.ints = ints
		default:
			return t, bad("tensor %q: %d values for shape %v", t.name, len(ints), t.dims)
		}
		return t, nil
	}
	switch {
	case raw != nil:
		if int64(len(raw)) != 4*size {
			return t, bad("tensor %q: %d raw bytes for %d floats", t.name, len(raw), size)
		}
		t.data = make([]float32, size)
		for i := range t.data {
			t.data[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	case int64(len(floats)) == size:
		t.data = floats
	default:
		return t, bad("tensor %q: %d values for shape %v", t.name, len(floats), t.dims)
	}
	return t, nil
}

// varintValue is one value of int32_data (field 5: int32s sign-extended to
// 64 bits, as protobuf encodes a negative int32) or int64_data (field 7).
func varintValue(num protowire.Number, x uint64) int64 {
	if num == tensorInt32s {
		return int64(int32(x))
	}
	return int64(x)
}

func parseValueInfo(b []byte) (valueInfo, error) {
	var vi valueInfo
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case valueName:
			vi.name = string(v)
		case valueType:
			// TypeProto.tensor_type(1) -> shape(2) -> dim(1) -> dim_value(1) | dim_param(2)
			return fields(v, func(n protowire.Number, t protowire.Type, tt []byte, _ uint64) error {
				if n != 1 || t != protowire.BytesType {
					return nil
				}
				return fields(tt, func(n protowire.Number, t protowire.Type, sh []byte, _ uint64) error {
					if n != 2 || t != protowire.BytesType {
						return nil
					}
					return fields(sh, func(n protowire.Number, t protowire.Type, dim []byte, _ uint64) error {
						if n != 1 || t != protowire.BytesType {
							return nil
						}
						d := int64(-1)
						err := fields(dim, func(n protowire.Number, t protowire.Type, _ []byte, x uint64) error {
							if n == 1 && t == protowire.VarintType {
								d = int64(x)
							}
							return nil
						})
						vi.dims = append(vi.dims, d)
						return err
					})
				})
			})
		}
		return nil
	})
	return vi, err
}
