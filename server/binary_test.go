package server_test

import (
	"encoding/binary"
	"errors"
	"io"
	"net/http/httptest"
	"strconv"
)

func binaryRead(r io.Reader, v any) error { return binary.Read(r, binary.LittleEndian, v) }

func itoa(i int) string { return strconv.Itoa(i) }

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

func errors_As(err error, target any) bool { return errors.As(err, target) }
