package main

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHTTPMode runs the benchmark briefly against an in-process server.
func TestHTTPMode(t *testing.T) {
	for _, format := range []string{"msgpack", "json", "compare", "unix", "bits", "sessions"} {
		t.Run(format, func(t *testing.T) {
			network, packing, sessions := "tcp", "none", 1
			switch format {
			case "unix":
				network, format = "unix", "msgpack"
			case "bits":
				packing, format = "bits", "msgpack"
			case "sessions":
				sessions, format = 2, "msgpack"
			}
			if format == "compare" {
				compare = true
				defer func() { compare = false }()
				format = "msgpack"
			}
			r, w, err := os.Pipe()
			require.NoError(t, err)
			stdout := os.Stdout
			os.Stdout = w
			err = runHTTP(config{mode: "http", players: 4, envs: 8, seconds: 0.2, seed: 1, learner: "0", opp: "random", format: format, network: network, packing: packing, sessions: sessions})
			os.Stdout = stdout
			w.Close()
			out, _ := io.ReadAll(r)
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(string(out), "steps_per_sec="), "output %q", out)
			require.Contains(t, string(out), "p99_us=")
			if compare {
				require.Contains(t, string(out), "http_over_inproc=")
			}
		})
	}
}
