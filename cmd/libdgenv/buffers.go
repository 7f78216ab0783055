package main

import (
	"unsafe"

	"github.com/davidgoliath/dgenv/env"
)

// The caller's buffers: every one comes as (pointer, length in bytes), and
// view is the only way a call turns one into a Go slice. It checks only
// what the pointer and the length say of each other; each call then checks
// the slice's length against what it will read or write (vecEnv.step,
// policyAct...), so no size the caller worked out is trusted.

// maxBuffer bounds a buffer's length (1 TiB): a longer one is a caller's
// mistake (a negative length seen as unsigned, a garbage word).
const maxBuffer = 1 << 40

// view is the caller's buffer at p of nbytes bytes as a []T: nil when
// nbytes is 0; an error naming field when nbytes is negative, too large or
// not a whole number of T, when p is null with a length, or when p is not
// aligned for T.
func view[T any](field string, p unsafe.Pointer, nbytes int64) ([]T, *env.Error) {
	var zero T
	size, align := int64(unsafe.Sizeof(zero)), uintptr(unsafe.Alignof(zero))
	switch {
	case nbytes < 0 || nbytes > maxBuffer:
		return nil, env.FieldError(field, "%s: a buffer of %d bytes", field, nbytes)
	case nbytes%size != 0:
		return nil, env.FieldError(field, "%s: %d bytes is not a whole number of %d-byte elements", field, nbytes, size)
	case nbytes == 0:
		return nil, nil
	case p == nil:
		return nil, env.FieldError(field, "%s: a null pointer with a length of %d bytes", field, nbytes)
	case uintptr(p)%align != 0:
		return nil, env.FieldError(field, "%s: address %#x is not aligned to %d bytes", field, uintptr(p), align)
	}
	return unsafe.Slice((*T)(p), nbytes/size), nil
}

// text is the caller's string at p of n bytes (a name, a path, a state's
// text: read by its length, not up to a NUL).
func text(field string, p unsafe.Pointer, n int64) (string, *env.Error) {
	b, e := view[byte](field, p, n)
	if e != nil {
		return "", e
	}
	return string(b), nil
}

// firstError is the first non-nil of errs.
func firstError(errs ...*env.Error) *env.Error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// wantLen is an error unless a buffer holds exactly want elements (shape
// says what they are, for the message).
func wantLen(field string, got, want int, shape string) *env.Error {
	if got == want {
		return nil
	}
	return env.FieldError(field, "%s: %d elements, want %d (%s)", field, got, want, shape)
}

// The calls of the per-step path, with Go types (the exported functions
// only convert theirs): the handle looked up, the buffers viewed, the
// batch checks their lengths. Nothing here allocates.

func vecReset(h int64, seed uint64, hasSeed bool, arena unsafe.Pointer, arenaLen int64) *env.Error {
	e, err := lookup[*vecEnv](h)
	if err != nil {
		return err
	}
	ar, err := view[byte]("arena", arena, arenaLen)
	if err != nil {
		return err
	}
	return e.reset(seed, hasSeed, ar)
}

func vecStep(h int64, actions unsafe.Pointer, actionsLen int64, arena unsafe.Pointer, arenaLen int64) *env.Error {
	e, err := lookup[*vecEnv](h)
	if err != nil {
		return err
	}
	acts, err := view[int32]("actions", actions, actionsLen)
	if err != nil {
		return err
	}
	ar, err := view[byte]("arena", arena, arenaLen)
	if err != nil {
		return err
	}
	return e.step(acts, ar)
}

func vecRandomActions(h int64, actions unsafe.Pointer, actionsLen int64) *env.Error {
	e, err := lookup[*vecEnv](h)
	if err != nil {
		return err
	}
	acts, err := view[int32]("actions", actions, actionsLen)
	if err != nil {
		return err
	}
	return e.randomActions(acts)
}
