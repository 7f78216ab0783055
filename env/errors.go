package env

import (
	"errors"
	"fmt"
)

// Code classifies an Error. Clients branch on the code, never on the
// message. The strings are the API's (docs/api.md lists them with their
// HTTP statuses; the in-process library reports the same strings).
type Code string

// The error codes of the API.
const (
	CodeBadRequest       Code = "bad_request"        // malformed body, unknown field, wrong length, out of range
	CodeUnauthorized     Code = "unauthorized"       // bearer token missing or wrong
	CodeForbidden        Code = "forbidden"          // a Host or Origin of another site (DNS rebinding, cross-site requests)
	CodeNotFound         Code = "not_found"          // unknown session, handle or route
	CodeMethodNotAllowed Code = "method_not_allowed" // a known path, another method (header Allow lists its methods)
	CodeBusy             Code = "busy"               // another request on this session is in flight
	CodeStaleSeq         Code = "stale_seq"          // a step or reset's seq is neither the session's nor a retry of its last request
	CodeConflict         Code = "conflict"           // a create's request_id was used with other settings
	CodeTooLarge         Code = "too_large"          // body over the cap, or a session over the whole memory budget
	// CodeUnsupportedMediaType: a body without an explicit JSON or msgpack Content-Type.
	CodeUnsupportedMediaType Code = "unsupported_media_type"
	CodeIllegalAction        Code = "illegal_action" // an action is not legal; nothing changed
	CodeLimit                Code = "limit"          // a cap is reached; retry later
	CodeUnavailable          Code = "unavailable"    // the server is shutting down
	CodeInternal             Code = "internal"       // a bug: a panic was caught
)

// Error is the one coded error of the front ends: the server answers it
// as {"error": {"code", "message", <details>}} with the code's HTTP status,
// the in-process library as {"code", "message", "details"} (server/wire
// has both wire forms). Details are
// extra fields (e.g. "field", the request field to blame; env, action,
// legal for illegal_action).
type Error struct {
	Code    Code
	Message string
	Details map[string]any
	// RetryAfter, in seconds, tells the caller when to retry (the server
	// sends it as the Retry-After header with 429 and 503).
	RetryAfter int
	err        error
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Unwrap is the engine error the Error was made from (FromEngine), or nil.
func (e *Error) Unwrap() error { return e.err }

// Errorf makes an *Error with a formatted message and no details.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// FieldError is a bad_request that names the request field to blame
// (details "field"); field "" names none.
func FieldError(field, format string, args ...any) *Error {
	e := Errorf(CodeBadRequest, format, args...)
	if field != "" {
		e.Details = map[string]any{"field": field}
	}
	return e
}

// With sets a detail of e and returns e.
func (e *Error) With(key string, v any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = v
	return e
}

// Field is the request field e blames, or "".
func (e *Error) Field() string {
	f, _ := e.Details["field"].(string)
	return f
}

// FromEngine maps an error of the engine to its coded form, the one
// mapping of the engine's typed errors: a parameter error (*ParamError)
// names "game.<param>", a config error (*ConfigError) its field, an
// unknown bot (*UnknownBotError) "opponent", each a bad_request; an
// illegal action (*IllegalActionError) is illegal_action with env, player,
// action and legal; a panic (*PanicError) is internal. Any other error is
// a bad_request naming no field; an *Error is returned as it is; nil is
// nil.
func FromEngine(err error) *Error {
	if err == nil {
		return nil
	}
	var (
		ce *Error
		pe *ParamError
		cf *ConfigError
		ub *UnknownBotError
		ia *IllegalActionError
		pn *PanicError
	)
	e := &Error{Code: CodeBadRequest, Message: err.Error(), err: err}
	switch {
	case errors.As(err, &ce):
		return ce
	case errors.As(err, &pn):
		e.Code, e.Message = CodeInternal, "internal error: "+err.Error()
	case errors.As(err, &ia):
		legal := ia.Legal
		if legal == nil {
			legal = []int{}
		}
		e.Code = CodeIllegalAction
		e.Details = map[string]any{"env": ia.Env, "player": ia.Player, "action": ia.Action, "legal": legal}
	case errors.As(err, &pe):
		e.Message = fmt.Sprintf("game.%s = %#v: %s", pe.Name, pe.Value, pe.Reason)
		e.Details = map[string]any{"field": "game." + pe.Name}
	case errors.As(err, &cf):
		e.Details = map[string]any{"field": cf.Field}
	case errors.As(err, &ub):
		e.Details = map[string]any{"field": "opponent"}
	}
	return e
}

// StepError maps the error of a Vec's Reset or Step whose Vec is not
// broken (Err is nil): an illegal action, after which no env was stepped,
// or a bad request.
func StepError(err error) *Error {
	e := FromEngine(err)
	if e != nil && e.Code == CodeIllegalAction {
		e.Message += "; no env was stepped"
	}
	return e
}
