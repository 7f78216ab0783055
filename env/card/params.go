package card

import (
	"fmt"
	"sort"

	"github.com/davidgoliath/dgenv/env"
)

// Params are the game parameters.
type Params struct {
	Players     int // 3..6 seats
	Deals       int // deals in a game, 1..MaxDeals; 0 means "as many as players"
	FirstDealer int // seat that deals the first deal, 0..players-1
}

// DefaultParams is a four-player game of four deals dealt first by seat 0.
func DefaultParams() Params { return Params{Players: 4, Deals: 4} }

// ErrParams is wrapped by every parameter error: the game interface's
// (env.ErrParams), one for every game.
var ErrParams = env.ErrParams

// ParamError names the parameter that is wrong: env.ParamError, so the
// server maps every game's parameter errors to the wire the same way.
type ParamError = env.ParamError

// Normalized fills the defaults (deals = players when 0) and validates.
func (p Params) Normalized() (Params, error) {
	if p.Players < MinPlayers || p.Players > MaxPlayers {
		return p, &ParamError{Name: "players", Value: p.Players, Reason: fmt.Sprintf("must be %d..%d", MinPlayers, MaxPlayers)}
	}
	if p.Deals == 0 {
		p.Deals = p.Players
	}
	if p.Deals < 1 || p.Deals > MaxDeals {
		return p, &ParamError{Name: "deals", Value: p.Deals, Reason: fmt.Sprintf("must be 1..%d", MaxDeals)}
	}
	if p.FirstDealer < 0 || p.FirstDealer >= p.Players {
		return p, &ParamError{Name: "first_dealer", Value: p.FirstDealer, Reason: fmt.Sprintf("must be 0..%d", p.Players-1)}
	}
	return p, nil
}

// ParseParams reads parameters from a map such as a decoded JSON object.
// Missing keys take their defaults (players 4, deals = players, first_dealer 0);
// an unknown key, a non-integer or an out-of-range value is a *ParamError.
func ParseParams(m map[string]any) (Params, error) {
	p := Params{Players: 4}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var dst *int
		switch k {
		case "players":
			dst = &p.Players
		case "deals":
			dst = &p.Deals
		case "first_dealer":
			dst = &p.FirstDealer
		default:
			return p, &ParamError{Name: k, Value: m[k], Reason: "unknown parameter (known: players, deals, first_dealer)"}
		}
		n, ok := env.AsInt(m[k])
		if !ok {
			return p, &ParamError{Name: k, Value: m[k], Reason: "must be an integer"}
		}
		*dst = n
	}
	if _, given := m["deals"]; given && p.Deals == 0 {
		return p, &ParamError{Name: "deals", Value: 0, Reason: fmt.Sprintf("must be 1..%d", MaxDeals)}
	}
	return p.Normalized()
}
