package server

// SetLittleEndian lets tests force the big-endian path (convert each buffer
// into scratch) on a little-endian machine; it returns the previous value.
func SetLittleEndian(v bool) bool {
	old := littleEndian
	littleEndian = v
	return old
}

// Counts reports the live sessions and envs of s.
func Counts(s *Server) (sessions, envs int) { return s.reg.counts() }

// SetActHook runs f in each worker of a policy act request (nil: none).
func SetActHook(f func(lo, hi int)) { testHookAct = f }
