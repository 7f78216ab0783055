package server

import (
	"errors"
	"fmt"
	"net/http"
)

// Code classifies an Error. Clients branch on the code, never on the message.
type Code string

// The error codes of the API (docs/api.md lists them with their statuses).
const (
	CodeBadRequest       Code = "bad_request"        // malformed body, unknown field, wrong length, out of range
	CodeUnauthorized     Code = "unauthorized"       // bearer token missing or wrong
	CodeForbidden        Code = "forbidden"          // a Host or Origin of another site (DNS rebinding, cross-site requests)
	CodeNotFound         Code = "not_found"          // unknown session or route
	CodeMethodNotAllowed Code = "method_not_allowed" // a known path, another method (header Allow lists its methods)
	CodeBusy             Code = "busy"               // another request on this session is in flight
	CodeStaleSeq         Code = "stale_seq"          // a step or reset's seq is neither the session's nor a retry of its last request
	CodeConflict         Code = "conflict"           // a create's request_id was used with other settings
	CodeTooLarge         Code = "too_large"          // body over the cap
	// CodeUnsupportedMediaType: a body without an explicit JSON or msgpack Content-Type.
	CodeUnsupportedMediaType Code = "unsupported_media_type"
	CodeIllegalAction        Code = "illegal_action" // an action is not legal; nothing changed
	CodeLimit                Code = "limit"          // a server cap is reached; retry later
	CodeUnavailable          Code = "unavailable"    // the server is shutting down
	CodeInternal             Code = "internal"       // a bug: the recovery middleware caught a panic
)

// Error is the one error type the handlers return. Details are extra fields
// of the error object on the wire (e.g. env, action, legal for illegal_action).
type Error struct {
	Code    Code
	Message string
	Details map[string]any
	// RetryAfter, in seconds, is sent as the Retry-After header (429, 503).
	RetryAfter int
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Errorf makes an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Status maps an error code to its HTTP status. It is the only place that
// knows the mapping.
func Status(code Code) int {
	switch code {
	case CodeBadRequest:
		return http.StatusBadRequest
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeForbidden:
		return http.StatusForbidden
	case CodeNotFound:
		return http.StatusNotFound
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case CodeBusy, CodeStaleSeq, CodeConflict:
		return http.StatusConflict
	case CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeUnsupportedMediaType:
		return http.StatusUnsupportedMediaType
	case CodeIllegalAction:
		return http.StatusUnprocessableEntity
	case CodeLimit:
		return http.StatusTooManyRequests
	case CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// asError turns any error into an *Error; errors that are not already one
// are internal.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternal, Message: err.Error()}
}

// wireError is the body of every error answer: {"error": {...}}.
func (e *Error) wire() map[string]any {
	m := make(map[string]any, 2+len(e.Details))
	for k, v := range e.Details {
		m[k] = v
	}
	m["code"] = string(e.Code)
	m["message"] = e.Message
	return map[string]any{"error": m}
}
