package main

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUnixSocketIsNeverOpenToOthers starts listening on a Unix socket many
// times under umask 000 while another goroutine watches the path: the file
// must never be seen with any permission for the group or others, not even
// for the moment between its creation and a chmod (issue 18: another user
// connected during start-up).
func TestUnixSocketIsNeverOpenToOthers(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := shortTempDir(t)
	sock := filepath.Join(dir, "dg.sock")
	var seen atomic.Uint32 // the union of the permission bits seen
	var sightings atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if fi, err := os.Lstat(sock); err == nil {
				sightings.Add(1)
				seen.Or(uint32(fi.Mode().Perm()))
			}
		}
	}()
	const starts = 300
	for i := range starts {
		ln, _, err := listen("unix:" + sock)
		require.NoError(t, err, "start %d", i)
		fi, err := os.Lstat(sock)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "start %d: socket permissions", i)
		require.NoError(t, ln.Close())
	}
	close(stop)
	wg.Wait()
	require.Positive(t, sightings.Load(), "the watcher never saw the socket")
	require.Zero(t, seen.Load()&0o077, "the socket was seen with mode %#o: open to the group or others", seen.Load())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "files left behind")
}
