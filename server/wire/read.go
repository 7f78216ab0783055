package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/davidgoliath/dgenv/env"
)

// RecordFrom reads one game record of any game back from the wire (a
// Record as the record route sends it), decoded generically: from msgpack,
// or from JSON with json.Decoder.UseNumber (DecodeJSON), so that a 64-bit
// seed keeps its low bits. It takes the game (name and parameters), the
// actions, the returns and the seed; the game's own fields (the card game's
// deals) go to Extra as decoded (map[string]any), from which a game
// without a seed in its records replays them (env.FieldStarter). A wire
// record does not say whether its game ended: Terminal is left false (see
// env.Record.DescribeOpenEnded). The errors name the field.
func RecordFrom(w map[string]any) (*env.Record, error) {
	game, ok := w["game"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("game is %s, want an object with the game's name and parameters", typeName(w["game"]))
	}
	r := &env.Record{Values: env.Values{}, Extra: map[string]any{}}
	for k, v := range game {
		if k == "name" {
			if r.Game, ok = v.(string); !ok {
				return nil, fmt.Errorf("game.name is %s, want a string", typeName(v))
			}
			continue
		}
		n, ok := asInt(v)
		if !ok {
			return nil, fmt.Errorf("game.%s = %v, want an integer", k, v)
		}
		r.Values[k] = n
	}
	if r.Game == "" {
		return nil, fmt.Errorf("game.name is missing")
	}
	acts, ok := w["actions"].([]any)
	if !ok {
		return nil, fmt.Errorf("actions is %s, want a list of integers", typeName(w["actions"]))
	}
	r.Actions = make([]int, len(acts))
	for i, a := range acts {
		if r.Actions[i], ok = asInt(a); !ok {
			return nil, fmt.Errorf("actions[%d] = %v, want an integer", i, a)
		}
	}
	rets, ok := w["returns"].([]any)
	if !ok {
		return nil, fmt.Errorf("returns is %s, want a list of numbers", typeName(w["returns"]))
	}
	r.Returns = make([]float64, len(rets))
	for i, x := range rets {
		if r.Returns[i], ok = asFloat(x); !ok {
			return nil, fmt.Errorf("returns[%d] = %v, want a number", i, x)
		}
	}
	if sd, ok := w["seed"]; ok && sd != nil {
		if r.Seed, ok = asUint64(sd); !ok {
			return nil, fmt.Errorf("seed = %v, want an integer 0..%d", sd, uint64(math.MaxUint64))
		}
		r.HasSeed = true
	}
	for k, v := range w {
		switch k {
		case "game", "actions", "returns", "seed":
		default:
			r.Extra.(map[string]any)[k] = plainNumbers(v)
		}
	}
	return r, nil
}

// DecodeJSON decodes a JSON value as RecordFrom reads it (numbers as
// json.Number), refusing data after it.
func DecodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("data after the JSON value")
	}
	return v, nil
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "missing (or null)"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	}
	return "a number"
}

// asInt is env.AsInt, also for a json.Number.
func asInt(v any) (int, bool) {
	if n, ok := v.(json.Number); ok {
		if i, err := strconv.ParseInt(string(n), 10, 32); err == nil {
			return int(i), true
		}
		f, err := n.Float64()
		if err != nil {
			return 0, false
		}
		v = f // an integral float, as env.AsInt takes one
	}
	return env.AsInt(v)
}

// asFloat reads a decoded JSON or msgpack number.
func asFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	n, ok := env.AsInt(v)
	return float64(n), ok
}

// asUint64 reads a decoded msgpack integer (any width) or a JSON one
// decoded as json.Number (a float64 would lose a 64-bit seed's low bits).
func asUint64(v any) (uint64, bool) {
	switch x := v.(type) {
	case uint64:
		return x, true
	case uint32:
		return uint64(x), true
	case uint16:
		return uint64(x), true
	case uint8:
		return uint64(x), true
	case int64:
		return uint64(x), x >= 0
	case int32:
		return uint64(x), x >= 0
	case int16:
		return uint64(x), x >= 0
	case int8:
		return uint64(x), x >= 0
	case int:
		return uint64(x), x >= 0
	case json.Number:
		n, err := strconv.ParseUint(string(x), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// plainNumbers replaces, in a value decoded with UseNumber, every
// json.Number by an int (or a float64 when it is not one), as env.AsInt
// and the games' StartFromFields read them.
func plainNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := strconv.Atoi(string(x)); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = plainNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = plainNumbers(x[k])
		}
	}
	return v
}
