package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"

	"github.com/davidgoliath/dgenv/env"
)

// format is a body encoding.
type format uint8

const (
	formatJSON format = iota
	formatMsgpack
)

const (
	mimeJSON    = "application/json"
	mimeMsgpack = "application/msgpack"
)

var (
	ctJSON    = []string{mimeJSON}
	ctMsgpack = []string{mimeMsgpack}
)

func isMsgpackType(mt string) bool {
	return mt == mimeMsgpack || mt == "application/x-msgpack" || mt == "application/vnd.msgpack"
}

// requestFormat reads Content-Type. An empty one means JSON on a request
// without a body; a body without one is refused (415: site.go).
func requestFormat(r *http.Request) (format, *env.Error) {
	ct := r.Header.Get("Content-Type")
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	switch {
	case mt == "" && !hasBody(r):
		return formatJSON, nil
	case mt == mimeJSON:
		return formatJSON, nil
	case isMsgpackType(mt):
		return formatMsgpack, nil
	}
	return formatJSON, unsupportedType(ct)
}

// responseFormat is the request's format unless Accept names one of ours.
func responseFormat(r *http.Request, in format) format {
	a := r.Header.Get("Accept")
	if a == "" {
		return in
	}
	a = strings.ToLower(a)
	im := strings.Index(a, "msgpack")
	ij := strings.Index(a, mimeJSON)
	switch {
	case im >= 0 && (ij < 0 || im < ij):
		return formatMsgpack
	case ij >= 0:
		return formatJSON
	}
	return in
}

// readBody reads the whole body, at most limit bytes, into *buf (reused).
// The buffer grows as bytes arrive, never to a declared Content-Length in
// advance: a client declaring a large body and sending none costs nothing.
func readBody(w http.ResponseWriter, r *http.Request, limit int64, buf *[]byte) ([]byte, *env.Error) {
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	b := (*buf)[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, tooLarge(limit)
			}
			return nil, env.Errorf(env.CodeBadRequest, "reading body: %v", err)
		}
	}
	*buf = b
	return b, nil
}

func tooLarge(limit int64) *env.Error {
	e := env.Errorf(env.CodeTooLarge, "body over %d bytes", limit)
	e.Details = map[string]any{"limit": limit}
	return e
}

// decode reads a whole body into dst, a pointer to a concrete struct:
// unknown fields are errors, and msgpack is scanned first (scanMsgpack).
func decode(f format, body []byte, dst any) *env.Error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil // an empty body is {}
	}
	if f == formatMsgpack {
		if err := scanMsgpack(body); err != nil {
			return env.Errorf(env.CodeBadRequest, "%v", err)
		}
		dec := msgpack.GetDecoder()
		defer msgpack.PutDecoder(dec)
		dec.Reset(bytes.NewReader(body))
		dec.DisallowUnknownFields(true)
		dec.SetCustomStructTag("json")
		if err := dec.Decode(dst); err != nil {
			return badBody(err)
		}
		return nil
	}
	if t := bytes.TrimSpace(body); t[0] != '{' {
		// encoding/json would take null as "no change" (an empty body is
		// {}, but null is not an object); other non-objects fail below.
		if bytes.Equal(t, []byte("null")) {
			return env.Errorf(env.CodeBadRequest, "body: null, want a JSON object")
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return badBody(err)
	}
	if dec.More() {
		return env.Errorf(env.CodeBadRequest, "body: data after the JSON value")
	}
	if _, err := dec.Token(); err != io.EOF {
		return env.Errorf(env.CodeBadRequest, "body: data after the JSON value")
	}
	return nil
}

func badBody(err error) *env.Error {
	var e *env.Error
	if errors.As(err, &e) {
		return e
	}
	return env.Errorf(env.CodeBadRequest, "body: %v", err)
}

// Uint is a non-negative integer field that refuses negatives and
// fractions in either format (the libraries would wrap or truncate them).
type Uint struct {
	V   uint64
	Set bool
}

// UnmarshalJSON implements json.Unmarshaler.
func (u *Uint) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*u = Uint{}
		return nil
	}
	var n json.Number
	if len(b) == 0 || b[0] < '0' || b[0] > '9' {
		return env.Errorf(env.CodeBadRequest, "seed = %.40s: want a non-negative integer", b)
	}
	if err := json.Unmarshal(b, &n); err != nil {
		return env.Errorf(env.CodeBadRequest, "seed: want a non-negative integer")
	}
	var v uint64
	if _, err := fmt.Sscan(n.String(), &v); err != nil || strings.ContainsAny(n.String(), ".eE-+") {
		return env.Errorf(env.CodeBadRequest, "seed = %s: want an integer 0..%d", n, uint64(1<<64-1))
	}
	*u = Uint{V: v, Set: true}
	return nil
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (u *Uint) DecodeMsgpack(dec *msgpack.Decoder) error {
	c, err := dec.PeekCode()
	if err != nil {
		return err
	}
	switch {
	case c == msgpcode.Nil:
		*u = Uint{}
		return dec.DecodeNil()
	case c <= msgpcode.PosFixedNumHigh || c == msgpcode.Uint8 || c == msgpcode.Uint16 || c == msgpcode.Uint32 || c == msgpcode.Uint64:
		v, err := dec.DecodeUint64()
		*u = Uint{V: v, Set: err == nil}
		return err
	case msgpcode.IsFixedNum(c) || c == msgpcode.Int8 || c == msgpcode.Int16 || c == msgpcode.Int32 || c == msgpcode.Int64:
		v, err := dec.DecodeInt64()
		if err != nil {
			return err
		}
		if v < 0 {
			return env.Errorf(env.CodeBadRequest, "seed = %d: must be >= 0", v)
		}
		*u = Uint{V: uint64(v), Set: true}
		return nil
	}
	return env.Errorf(env.CodeBadRequest, "seed: want a non-negative integer (msgpack code 0x%02x)", c)
}

// Seq is the optional "seq" of a step or reset request: the seq of the last
// batch the client holds. It refuses fractions and non-integers in either
// format.
type Seq struct {
	V   int64
	Set bool
}

// UnmarshalJSON implements json.Unmarshaler.
func (q *Seq) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*q = Seq{}
		return nil
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return seqError("%.40s", b)
	}
	*q = Seq{V: v, Set: true}
	return nil
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (q *Seq) DecodeMsgpack(dec *msgpack.Decoder) error {
	c, err := dec.PeekCode()
	if err != nil {
		return err
	}
	switch {
	case c == msgpcode.Nil:
		*q = Seq{}
		return dec.DecodeNil()
	case c == msgpcode.Uint64:
		v, err := dec.DecodeUint64()
		if err != nil {
			return err
		}
		if v > math.MaxInt64 {
			return seqError("%d", v)
		}
		*q = Seq{V: int64(v), Set: true}
		return nil
	case isIntCode(c):
		v, err := dec.DecodeInt64()
		*q = Seq{V: v, Set: err == nil}
		return err
	}
	return seqError("(msgpack code 0x%02x)", c)
}

func seqError(format string, v any) *env.Error {
	e := env.Errorf(env.CodeBadRequest, "seq = "+format+": want an integer (the seq of the last batch you hold)", v)
	e.Details = map[string]any{"field": "seq"}
	return e
}

// requestIDPattern is what a create's request_id may be.
var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// createRequest is the body of POST /v1/sessions.
type createRequest struct {
	Game         *gameRequest `json:"game"`
	NumEnvs      *int         `json:"num_envs"`
	Seed         Uint         `json:"seed"`
	LearnerSeats seatList     `json:"learner_seats"`
	Opponent     string       `json:"opponent"`
	// Opponents names a bot per seat, null (or "") on learner seats:
	// a table of different bots, instead of opponent.
	Opponents botList `json:"opponents"`
	Reward    string  `json:"reward"`
	ObsDtype  string  `json:"obs_dtype"`
	Packing   string  `json:"packing"`
	// RequestID makes the create idempotent: a create repeating a live
	// session's request_id with the same settings answers that session.
	RequestID *string `json:"request_id"`
}

// botList is "opponents": a bot name per seat, "" where the list has null
// (or ""); nil when the field is absent or null.
type botList []string

// UnmarshalJSON implements json.Unmarshaler.
func (l *botList) UnmarshalJSON(b []byte) error {
	var xs []*string
	if err := json.Unmarshal(b, &xs); err != nil {
		return badBots()
	}
	return l.set(xs)
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (l *botList) DecodeMsgpack(dec *msgpack.Decoder) error {
	var xs []*string
	if err := dec.Decode(&xs); err != nil {
		return badBots()
	}
	return l.set(xs)
}

func badBots() *env.Error {
	e := env.Errorf(env.CodeBadRequest, "opponents: want a list with a bot name (a string) for each seat, null for learner seats")
	e.Details = map[string]any{"field": "opponents"}
	return e
}

func (l *botList) set(xs []*string) error {
	if xs == nil {
		*l = nil
		return nil
	}
	out := make(botList, len(xs))
	for i, x := range xs {
		if x != nil {
			out[i] = *x
		}
	}
	*l = out
	return nil
}

// seatList is a list of seat numbers that refuses null elements (both
// libraries would decode them as seat 0).
type seatList []int

// UnmarshalJSON implements json.Unmarshaler.
func (l *seatList) UnmarshalJSON(b []byte) error {
	var xs []*int
	if err := json.Unmarshal(b, &xs); err != nil {
		return err
	}
	return l.set(xs)
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (l *seatList) DecodeMsgpack(dec *msgpack.Decoder) error {
	var xs []*int
	if err := dec.Decode(&xs); err != nil {
		return err
	}
	return l.set(xs)
}

func (l *seatList) set(xs []*int) error {
	if xs == nil {
		*l = nil
		return nil
	}
	out := make(seatList, len(xs))
	for i, x := range xs {
		if x == nil {
			e := env.Errorf(env.CodeBadRequest, "learner_seats[%d]: null, want a seat number", i)
			e.Details = map[string]any{"field": "learner_seats"}
			return e
		}
		out[i] = *x
	}
	*l = out
	return nil
}

// gameRequest is the create request's "game": {"name": ..., <params>}.
// The parameters are the game's own (GET /v1/games lists them); the
// engine checks them. Integer values are kept as int (so two requests
// compare equal whatever codec carried them), anything else as decoded,
// for the engine to refuse by name.
type gameRequest struct {
	Name   string
	Params map[string]any // nil when none is given
}

// UnmarshalJSON implements json.Unmarshaler.
func (g *gameRequest) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return env.Errorf(env.CodeBadRequest, "game: want an object: %v", err)
	}
	*g = gameRequest{}
	for k, raw := range m {
		if k == "name" {
			if err := json.Unmarshal(raw, &g.Name); err != nil {
				return fieldErrorf("game.name", "game.name: want a string")
			}
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return fieldErrorf("game."+k, "game.%s: %v", k, err)
		}
		if n, ok := v.(json.Number); ok {
			if i, err := n.Int64(); err == nil {
				v = i
			} else if f, err := n.Float64(); err == nil {
				v = f
			}
		}
		g.set(k, v)
	}
	return nil
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (g *gameRequest) DecodeMsgpack(dec *msgpack.Decoder) error {
	*g = gameRequest{}
	if c, err := dec.PeekCode(); err == nil && c == msgpcode.Nil {
		return dec.DecodeNil()
	}
	n, err := dec.DecodeMapLen()
	if err != nil {
		return env.Errorf(env.CodeBadRequest, "game: want a map: %v", err)
	}
	for range n {
		k, err := dec.DecodeString()
		if err != nil {
			return env.Errorf(env.CodeBadRequest, "game.: keys must be strings: %v", err)
		}
		if k == "name" {
			if g.Name, err = dec.DecodeString(); err != nil {
				return fieldErrorf("game.name", "game.name: want a string")
			}
			continue
		}
		v, err := dec.DecodeInterface()
		if err != nil {
			return fieldErrorf("game."+k, "game.%s: %v", k, err)
		}
		g.set(k, v)
	}
	return nil
}

func (g *gameRequest) set(k string, v any) {
	if v == nil {
		return // null: the default, as for every optional field
	}
	if n, ok := env.AsInt(v); ok {
		v = n
	}
	if g.Params == nil {
		g.Params = map[string]any{}
	}
	g.Params[k] = v
}

func fieldErrorf(field, format string, args ...any) *env.Error {
	e := env.Errorf(env.CodeBadRequest, format, args...)
	e.Details = map[string]any{"field": field}
	return e
}

// resetRequest is the body of POST .../reset.
type resetRequest struct {
	Seed Uint `json:"seed"`
	Seq  Seq  `json:"seq"`
}

// actionsField decodes "actions" straight into a session's buffer: either a
// tensor {"dtype", "shape": [N], "data"} or a plain array of N integers.
type actionsField struct {
	dst []int32 // len N, owned by the session
	raw []byte  // scratch for a tensor blob, cap 8N
	got bool
	// numActions is the game's action count: actions are 0..numActions-1 or Skip.
	numActions int
}

type stepRequest struct {
	Actions *actionsField `json:"actions"`
	Seq     Seq           `json:"seq"`
}

// DecodeMsgpack implements msgpack.CustomDecoder without reflection or
// per-element allocation: the blob is read into the session's scratch.
func (a *actionsField) DecodeMsgpack(dec *msgpack.Decoder) error {
	c, err := dec.PeekCode()
	if err != nil {
		return err
	}
	n := len(a.dst)
	switch {
	case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
		l, err := dec.DecodeArrayLen()
		if err != nil {
			return err
		}
		if l != n {
			return wrongCount(l, n)
		}
		for i := range n {
			c, err := dec.PeekCode()
			if err != nil {
				return err
			}
			if !isIntCode(c) {
				return env.Errorf(env.CodeBadRequest, "actions[%d]: want an integer (msgpack code 0x%02x)", i, c)
			}
			v, err := dec.DecodeInt64()
			if err != nil {
				return err
			}
			if c == msgpcode.Uint64 && v < 0 {
				v = 1 << 62 // a huge unsigned value: out of range either way
			}
			if e := checkAction(i, v, a.numActions); e != nil {
				return e
			}
			a.dst[i] = int32(v)
		}
		a.got = true
		return nil
	case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
		l, err := dec.DecodeMapLen()
		if err != nil {
			return err
		}
		var dtype string
		var shapeOK, gotShape, gotData bool
		data := a.raw[:0]
		for range l {
			key, err := dec.DecodeString()
			if err != nil {
				return err
			}
			switch key {
			case "dtype":
				if dtype, err = dec.DecodeString(); err != nil {
					return err
				}
			case "shape":
				k, err := dec.DecodeArrayLen()
				if err != nil {
					return err
				}
				gotShape = true
				shapeOK = k == 1
				for range k {
					v, err := dec.DecodeInt64()
					if err != nil {
						return err
					}
					shapeOK = shapeOK && v == int64(n)
				}
			case "data":
				m, err := dec.DecodeBytesLen()
				if err != nil {
					return err
				}
				if m < 0 || m > cap(a.raw) {
					return env.Errorf(env.CodeBadRequest, "actions: %d data bytes for %d envs", m, n)
				}
				data = a.raw[:m]
				if err := dec.ReadFull(data); err != nil {
					return err
				}
				gotData = true
			default:
				return env.Errorf(env.CodeBadRequest, "actions: unknown tensor field %q (want dtype, shape, data)", key)
			}
		}
		if !gotData || dtype == "" {
			return env.Errorf(env.CodeBadRequest, "actions tensor: dtype and data are required")
		}
		if gotShape && !shapeOK {
			return env.Errorf(env.CodeBadRequest, "actions tensor: shape must be [%d]", n)
		}
		if e := decodeActionBlob(dtype, data, a.dst, a.numActions); e != nil {
			return e
		}
		a.got = true
		return nil
	}
	return env.Errorf(env.CodeBadRequest, "actions: want a tensor map or an array of integers (msgpack code 0x%02x)", c)
}

func isIntCode(c byte) bool {
	return msgpcode.IsFixedNum(c) || (c >= msgpcode.Uint8 && c <= msgpcode.Int64)
}

func wrongCount(got, n int) *env.Error {
	e := env.Errorf(env.CodeBadRequest, "actions: got %d, want one per env (%d)", got, n)
	e.Details = map[string]any{"got": got, "want": n}
	return e
}

// UnmarshalJSON implements json.Unmarshaler (the debugging path).
func (a *actionsField) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return env.Errorf(env.CodeBadRequest, "actions: empty")
	}
	switch b[0] {
	case '[':
		var list []json.Number
		if err := json.Unmarshal(b, &list); err != nil {
			return env.Errorf(env.CodeBadRequest, "actions: want an array of integers: %v", err)
		}
		if len(list) != len(a.dst) {
			return wrongCount(len(list), len(a.dst))
		}
		for i, x := range list {
			v, err := x.Int64()
			if err != nil {
				return env.Errorf(env.CodeBadRequest, "actions[%d] = %s: want an integer", i, x)
			}
			if e := checkAction(i, v, a.numActions); e != nil {
				return e
			}
			a.dst[i] = int32(v)
		}
	case '{':
		var t struct {
			Dtype string `json:"dtype"`
			Shape []int  `json:"shape"`
			Data  []byte `json:"data"`
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&t); err != nil {
			return env.Errorf(env.CodeBadRequest, "actions tensor: %v", err)
		}
		if t.Shape != nil && (len(t.Shape) != 1 || t.Shape[0] != len(a.dst)) {
			return env.Errorf(env.CodeBadRequest, "actions tensor: shape %v must be [%d]", t.Shape, len(a.dst))
		}
		if e := decodeActionBlob(t.Dtype, t.Data, a.dst, a.numActions); e != nil {
			return e
		}
	default:
		return env.Errorf(env.CodeBadRequest, "actions: want a tensor object or an array of integers")
	}
	a.got = true
	return nil
}

// decodeFields decodes a msgpack map into the fields named in fields (each a
// pointer), so an unknown key or a value of the wrong type is an error that
// names its field. prefix ("game.") qualifies the names of a nested map.
func decodeFields(dec *msgpack.Decoder, prefix string, fields map[string]any) error {
	c, err := dec.PeekCode()
	if err != nil {
		return err
	}
	if !msgpcode.IsFixedMap(c) && c != msgpcode.Map16 && c != msgpcode.Map32 {
		if c == msgpcode.Nil && prefix != "" {
			return dec.DecodeNil()
		}
		name := "body"
		if prefix != "" {
			name = strings.TrimSuffix(prefix, ".")
		}
		return env.Errorf(env.CodeBadRequest, "%s: want a map (msgpack code 0x%02x)", name, c)
	}
	n, err := dec.DecodeMapLen()
	if err != nil {
		return err
	}
	for range n {
		key, err := dec.DecodeString()
		if err != nil {
			return env.Errorf(env.CodeBadRequest, "%skeys must be strings: %v", prefix, err)
		}
		dst, ok := fields[key]
		if !ok {
			return env.Errorf(env.CodeBadRequest, "unknown field %q", prefix+key)
		}
		if err := dec.Decode(dst); err != nil {
			var e *env.Error
			if errors.As(err, &e) {
				return e
			}
			e = env.Errorf(env.CodeBadRequest, "%s: %v", prefix+key, err)
			e.Details = map[string]any{"field": prefix + key}
			return e
		}
	}
	return nil
}

// DecodeMsgpack implements msgpack.CustomDecoder, naming bad fields. The
// fields are the struct's json tags (fieldsOf): one list for both codecs.
func (r *createRequest) DecodeMsgpack(dec *msgpack.Decoder) error {
	return decodeFields(dec, "", fieldsOf(r))
}

// DecodeMsgpack implements msgpack.CustomDecoder, naming bad fields.
func (r *resetRequest) DecodeMsgpack(dec *msgpack.Decoder) error {
	return decodeFields(dec, "", fieldsOf(r))
}

// fieldsOf maps each json tag name of the struct *p to a pointer to its
// field: the request's field list, which encoding/json reads from the same
// tags, so JSON and msgpack accept exactly the same fields.
func fieldsOf(p any) map[string]any {
	v := reflect.ValueOf(p).Elem()
	t := v.Type()
	out := make(map[string]any, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		out[name] = v.Field(i).Addr().Interface()
	}
	return out
}

// DecodeMsgpack implements msgpack.CustomDecoder without reflection or maps
// (the hot path): the fields are "actions" and "seq".
func (r *stepRequest) DecodeMsgpack(dec *msgpack.Decoder) error {
	n, err := dec.DecodeMapLen()
	if err != nil {
		return env.Errorf(env.CodeBadRequest, "body: want a map: %v", err)
	}
	r.Seq = Seq{}
	for range n {
		key, err := dec.DecodeString()
		if err != nil {
			return env.Errorf(env.CodeBadRequest, "body: keys must be strings: %v", err)
		}
		if key == "seq" {
			if err := r.Seq.DecodeMsgpack(dec); err != nil {
				return err
			}
			continue
		}
		if key != "actions" {
			return env.Errorf(env.CodeBadRequest, "unknown field %q", key)
		}
		if c, err := dec.PeekCode(); err == nil && c == msgpcode.Nil {
			return env.Errorf(env.CodeBadRequest, "actions: null")
		}
		if r.Actions == nil {
			return env.Errorf(env.CodeBadRequest, "actions: nowhere to decode")
		}
		if err := r.Actions.DecodeMsgpack(dec); err != nil {
			var e *env.Error
			if errors.As(err, &e) {
				return e
			}
			return env.Errorf(env.CodeBadRequest, "actions: %v", err)
		}
	}
	return nil
}
