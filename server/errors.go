package server

import (
	"errors"
	"net/http"

	"github.com/davidgoliath/dgenv/env"
)

// Status maps an error code (env.Code) to its HTTP status. It is the only
// place that knows the mapping.
func Status(code env.Code) int {
	switch code {
	case env.CodeBadRequest:
		return http.StatusBadRequest
	case env.CodeUnauthorized:
		return http.StatusUnauthorized
	case env.CodeForbidden:
		return http.StatusForbidden
	case env.CodeNotFound:
		return http.StatusNotFound
	case env.CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case env.CodeBusy, env.CodeStaleSeq, env.CodeConflict:
		return http.StatusConflict
	case env.CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case env.CodeUnsupportedMediaType:
		return http.StatusUnsupportedMediaType
	case env.CodeIllegalAction:
		return http.StatusUnprocessableEntity
	case env.CodeLimit:
		return http.StatusTooManyRequests
	case env.CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// asError turns any error into an *env.Error; errors that are not already
// one are internal.
func asError(err error) *env.Error {
	var e *env.Error
	if errors.As(err, &e) {
		return e
	}
	return &env.Error{Code: env.CodeInternal, Message: err.Error()}
}

// wireError is the body of every error answer: {"error": {"code",
// "message", <details>}}.
func wireError(e *env.Error) map[string]any {
	m := make(map[string]any, 2+len(e.Details))
	for k, v := range e.Details {
		m[k] = v
	}
	m["code"] = string(e.Code)
	m["message"] = e.Message
	return map[string]any{"error": m}
}
