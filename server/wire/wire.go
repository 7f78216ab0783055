// Package wire holds the wire types of a session (its spec, observation
// layout and game records) and their conversion from the engine's types:
// the one definition the server, cmd/libdgenv (the same API in process)
// and cmd/dgbench share. The engine's types carry no wire names; renaming
// a Go field in env/ or obs/ cannot change the API.
package wire

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/policy"
	"github.com/davidgoliath/dgenv/obs"
)

// Spec describes a session: what the create answer and GET /v1/sessions/{id} carry.
type Spec struct {
	NumEnvs      int    `json:"num_envs"`
	Players      int    `json:"players"`
	NumActions   int    `json:"num_actions"`
	LearnerSeats []int  `json:"learner_seats"`
	Opponent     string `json:"opponent"`
	// Opponents is each seat's bot, null on learner seats (with opponent
	// or with a list of opponents given).
	Opponents []*string `json:"opponents"`
	Reward    string    `json:"reward"`
	Seed      uint64    `json:"seed"`
	Game      GameSpec  `json:"game"`
	Packing   string    `json:"packing"` // "none" or "bits"
	Obs       ObsSpec   `json:"obs"`
}

// ObsSpec describes the observation tensor.
type ObsSpec struct {
	Shape    []int     `json:"shape"`
	Dtype    string    `json:"dtype"`
	Sections []Section `json:"sections"`
	// Packed says how obs_bits, obs_extra and mask_bits carry obs and mask
	// in a session created with "packing": "bits"; absent otherwise.
	Packed *PackedSpec `json:"packed,omitempty"`
}

// PackedSpec describes a packed session's answers. Unpacking (numpy):
// obs = np.unpackbits(obs_bits, axis=1, count=D, bitorder="little"), then
// each extra span's bytes from obs_extra (in order) copied over
// obs[:, offset:offset+length]; mask = np.unpackbits(mask_bits, axis=1,
// count=num_actions, bitorder="little") (90 in the card game).
type PackedSpec struct {
	Bitorder   string `json:"bitorder"`    // "little": element i is bit i%8 of byte i/8
	ObsBytes   int    `json:"obs_bytes"`   // obs_bits row: ceil(D/8)
	Extra      []Span `json:"extra"`       // spans of obs carried in obs_extra, in order
	ExtraBytes int    `json:"extra_bytes"` // obs_extra row
	MaskBytes  int    `json:"mask_bytes"`  // mask_bits row: ceil(num_actions/8)
}

// GameSpec is the wire's "game": {"name": ..., <every parameter>}.
type GameSpec map[string]any

// GameOf describes g: its name and parameters, defaults filled.
func GameOf(g env.Game) GameSpec {
	out := GameSpec{"name": g.Type().Name}
	for k, v := range g.Values() {
		out[k] = v
	}
	return out
}

// Section is one named block of the observation, as the wire shows it
// (obs.Section's fields; the engine's types carry no wire names).
type Section struct {
	Name   string `json:"name"`
	Offset int    `json:"offset"`
	Shape  []int  `json:"shape"`
	Min    int    `json:"min"`
	Max    int    `json:"max"`
	Doc    string `json:"doc"`
}

// Span is a run of the observation carried in obs_extra.
type Span struct {
	Name   string `json:"name"`
	Offset int    `json:"offset"`
	Length int    `json:"length"`
}

// Sections converts an observation layout.
func Sections(ss []obs.Section) []Section {
	out := make([]Section, len(ss))
	for i, s := range ss {
		out[i] = Section{Name: s.Name, Offset: s.Offset, Shape: s.Shape, Min: s.Min, Max: s.Max, Doc: s.Doc}
	}
	return out
}

// Spans converts a packing's extra spans.
func Spans(ss []obs.Span) []Span {
	out := make([]Span, len(ss))
	for i, s := range ss {
		out[i] = Span{Name: s.Name, Offset: s.Offset, Length: s.Length}
	}
	return out
}

// Record is one game's record on the wire: the same fields for every
// game (game, actions, returns, and seed when it replays the game), then
// the fields of the game's own record form (env.RecordFielder: the card
// game's deals and totals), in order.
type Record struct {
	Game    GameSpec  `json:"game"`
	Actions []int     `json:"actions"`
	Returns []float64 `json:"returns"`
	Seed    *uint64   `json:"seed,omitempty"`
	// Extra is the game's own fields, written after the others.
	Extra []env.Field `json:"-"`
}

// RecordOf converts a record of the engine (nil stays nil).
func RecordOf(sr *env.Record) *Record {
	if sr == nil {
		return nil
	}
	g := &Record{Game: GameSpec{"name": sr.Game}, Actions: sr.Actions, Returns: sr.Returns}
	for k, v := range sr.Values {
		g.Game[k] = v
	}
	if g.Actions == nil {
		g.Actions = []int{}
	}
	if sr.HasSeed {
		seed := sr.Seed
		g.Seed = &seed
	}
	if f, ok := sr.Extra.(env.RecordFielder); ok {
		g.Extra = f.RecordFields()
	}
	return g
}

// recordFields is a Record's fields but Extra: encoded as the struct.
type recordFields Record

// MarshalJSON implements json.Marshaler: the fields, then Extra's.
func (r Record) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(recordFields(r))
	if err != nil || len(r.Extra) == 0 {
		return b, err
	}
	extra, err := json.Marshal(object(r.Extra))
	if err != nil {
		return nil, err
	}
	return append(append(b[:len(b)-1], ','), extra[1:]...), nil
}

// EncodeMsgpack implements msgpack.CustomEncoder: a map of the fields,
// then Extra's (as the struct's fields would be, seed left out when nil).
func (r *Record) EncodeMsgpack(enc *msgpack.Encoder) error {
	n := 3 + len(r.Extra)
	if r.Seed != nil {
		n++
	}
	if err := enc.EncodeMapLen(n); err != nil {
		return err
	}
	kv := []any{"game", r.Game, "actions", r.Actions, "returns", r.Returns}
	if r.Seed != nil {
		kv = append(kv, "seed", r.Seed)
	}
	for _, f := range r.Extra {
		kv = append(kv, f.Name, wireValue(f.Value))
	}
	for _, x := range kv {
		if err := enc.Encode(x); err != nil {
			return err
		}
	}
	return nil
}

// object is a game's fields as an object whose keys keep their order.
type object []env.Field

// wireValue is v with its objects (env.RecordFielder's forms) as object.
func wireValue(v any) any {
	switch v := v.(type) {
	case []env.Field:
		return object(v)
	case [][]env.Field:
		out := make([]object, len(v))
		for i, o := range v {
			out[i] = o
		}
		return out
	}
	return v
}

// MarshalJSON implements json.Marshaler.
func (o object) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, f := range o {
		if i > 0 {
			b = append(b, ',')
		}
		k, err := json.Marshal(f.Name)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(wireValue(f.Value))
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (o object) EncodeMsgpack(enc *msgpack.Encoder) error {
	if err := enc.EncodeMapLen(len(o)); err != nil {
		return err
	}
	for _, f := range o {
		if err := enc.EncodeString(f.Name); err != nil {
			return err
		}
		if err := enc.Encode(wireValue(f.Value)); err != nil {
			return err
		}
	}
	return nil
}

// NewSpec describes a batch of game g built with vc (v is the Vec built).
func NewSpec(g env.Game, v env.Vec, vc env.VecConfig, obsDtype string) Spec {
	l := g.Observation()
	na := g.NumDistinctActions()
	spec := Spec{
		NumEnvs: vc.NumEnvs, Players: g.NumPlayers(), NumActions: na,
		LearnerSeats: v.LearnerSeats(), Opponent: vc.Opponent, Reward: vc.Reward.String(),
		Seed: vc.Seed, Game: GameOf(g), Packing: PackingNone,
		Obs: ObsSpec{Shape: []int{l.Size}, Dtype: obsDtype, Sections: Sections(l.Sections)},
	}
	learner := make([]bool, spec.Players)
	seats := v.LearnerSeats()
	for _, s := range seats {
		learner[s] = true
	}
	spec.Opponents = make([]*string, spec.Players)
	for s := range spec.Opponents {
		name := vc.Opponent
		if vc.Opponents != nil {
			name = vc.Opponents[s]
		}
		if !learner[s] && len(seats) < spec.Players && name != "" {
			spec.Opponents[s] = &name
		}
	}
	if vc.Packed {
		p := v.Packing()
		spec.Packing = PackingBits
		spec.Obs.Packed = &PackedSpec{Bitorder: "little", ObsBytes: p.Bytes, Extra: Spans(p.Extra), ExtraBytes: p.ExtraBytes, MaskBytes: obs.PackedLen(na)}
	}
	return spec
}

// Packing modes of a session's answers.
const (
	PackingNone = env.PackingNone
	PackingBits = env.PackingBits
)

// PolicyInfo is one entry of GET /v1/policies (and of libdgenv's list).
type PolicyInfo struct {
	Name string `json:"name"`
	Bot  string `json:"bot"`
	// Game is the game the policy plays, as a create-session's "game"
	// takes it: {"name", ...parameters}.
	Game        GameSpec `json:"game"`
	ObsSize     int      `json:"obs_size"`
	NumActions  int      `json:"num_actions"`
	SHA256      string   `json:"sha256"`
	Description string   `json:"description"`
}

// PolicyInfoOf describes the policy p loaded as name.
func PolicyInfoOf(name string, p *policy.Policy) PolicyInfo {
	m := p.Meta()
	return PolicyInfo{
		Name: name, Bot: "policy:" + name, Game: GameOf(p.Game()), ObsSize: m.ObsSize,
		NumActions: m.NumActions, SHA256: p.SHA256(), Description: m.Description,
	}
}

// Int reads an integer parameter of a decoded GameSpec (JSON gives float64,
// msgpack an integer type); 0 when absent or not an integer.
func (g GameSpec) Int(key string) int {
	n, _ := env.AsInt(g[key])
	return n
}

// UnmarshalMsgpack decodes a msgpack answer of the server into wire types:
// they carry json tags only, and msgpack uses the same names.
func UnmarshalMsgpack(b []byte, out any) error {
	dec := msgpack.NewDecoder(bytes.NewReader(b))
	dec.SetCustomStructTag("json")
	return dec.Decode(out)
}

// UnmarshalJSON implements json.Unmarshaler: integer values become int,
// as DecodeMsgpack makes them, so a spec reads the same from either codec.
func (g *GameSpec) UnmarshalJSON(b []byte) error {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*g = normalize(m)
	return nil
}

// DecodeMsgpack implements msgpack.CustomDecoder (see UnmarshalJSON).
func (g *GameSpec) DecodeMsgpack(dec *msgpack.Decoder) error {
	m, err := dec.DecodeMap()
	if err != nil {
		return err
	}
	if m == nil {
		*g = nil
		return nil
	}
	*g = normalize(m)
	return nil
}

func normalize(m map[string]any) GameSpec {
	if m == nil {
		return nil
	}
	out := make(GameSpec, len(m))
	for k, v := range m {
		if n, ok := env.AsInt(v); ok {
			v = n
		}
		out[k] = v
	}
	return out
}

// Error is a coded error as the in-process library reports it:
// {"code", "message", "details"} (the server sends the same fields as
// {"error": {"code", "message", <details>}}).
type Error struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// ErrorOf converts a coded error.
func ErrorOf(e *env.Error) Error {
	return Error{Code: string(e.Code), Message: e.Message, Details: e.Details}
}

// RandomSeed draws the seed of a session created without one (it is
// reported in the spec, so the run can be repeated).
func RandomSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return binary.LittleEndian.Uint64(b[:])
}

// GameInfo is one entry of GET /v1/games (and libdgenv's dg_games).
type GameInfo struct {
	Name          string      `json:"name"`
	Doc           string      `json:"doc"`
	Default       bool        `json:"default"`
	Players       []int       `json:"players"`
	Params        []ParamInfo `json:"params"`
	NumActions    int         `json:"num_actions"`
	MaxGameLength int         `json:"max_game_length"`
	Obs           ObsSpec     `json:"obs"`
	Bots          []string    `json:"bots"`
}

// ParamInfo is one parameter of a game type.
type ParamInfo struct {
	Name    string `json:"name"`
	Default int    `json:"default"`
	Min     int    `json:"min"`
	Max     int    `json:"max"`
	Doc     string `json:"doc"`
}

// GamesOf lists the games of reg, the default first; sizes and layout are
// those of each game's default parameters.
func GamesOf(reg *env.Registry) ([]GameInfo, error) {
	names := reg.Names()
	list := make([]GameInfo, 0, len(names))
	for i, name := range names {
		typ, err := reg.Lookup(name)
		if err != nil {
			return nil, err
		}
		g, err := typ.Default()
		if err != nil {
			return nil, fmt.Errorf("game %s: its default parameters fail: %w", name, err)
		}
		l := g.Observation()
		info := GameInfo{Name: name, Doc: typ.Doc, Default: i == 0, Players: typ.Players, Params: []ParamInfo{},
			NumActions: g.NumDistinctActions(), MaxGameLength: g.MaxGameLength(),
			Obs: ObsSpec{Shape: []int{l.Size}, Dtype: "<u1", Sections: Sections(l.Sections)}, Bots: reg.Bots(name)}
		for _, p := range typ.Params {
			info.Params = append(info.Params, ParamInfo{Name: p.Name, Default: p.Default, Min: p.Min, Max: p.Max, Doc: p.Doc})
		}
		list = append(list, info)
	}
	return list, nil
}
