package main

import (
	"bufio"
	"context"
	"io"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/server"
)

// TestRunTiesTheSoftMemoryLimitToTheBudget: the server's process collects
// garbage before its heap outgrows limits.memory_budget plus its start-up
// memory and a slack (issue 18: RSS reached 1.45 times the budget).
func TestRunTiesTheSoftMemoryLimitToTheBudget(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	const budget = 1 << 30
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--addr", "127.0.0.1:0"}, []string{"DGSERVER_LIMITS_MEMORY_BUDGET=1073741824"}, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(line, "listening on "), "first line %q", line)
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	limit := debug.SetMemoryLimit(-1)
	cancel()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
	assert.GreaterOrEqual(t, limit, int64(budget+64<<20), "soft memory limit")
	assert.Less(t, limit, int64(budget+1<<30), "soft memory limit: the budget plus the start-up memory and a slack")
}

func TestAGOMEMLIMITIsLeftAlone(t *testing.T) {
	_, ok := memoryLimit(loadDefault(t), []string{"GOMEMLIMIT=3GiB"})
	assert.False(t, ok)
	limit, ok := memoryLimit(loadDefault(t), []string{"HOME=/x"})
	assert.True(t, ok)
	assert.Greater(t, limit, loadDefault(t).Limits.MemoryBudget)
}

func loadDefault(tb testing.TB) server.Config {
	tb.Helper()
	cfg, err := loadConfig(nil, nil)
	require.NoError(tb, err)
	return cfg
}
