package workspace

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The file tools answer at once for a FIFO a command made, instead of
// waiting forever for its other end; search passes it by.
func TestFileToolsRefuseWhatIsNotARegularFile(t *testing.T) {
	w, dir := fileWorkspace(t)
	fifo := filepath.Join(dir, "pipe")
	require.NoError(t, syscall.Mkfifo(fifo, 0o666))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "dir", "pipe"), 0o666))
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"ReadFile", func() error { _, err := w.ReadFile("pipe", 0, 0); return err }},
		{"WriteFile", func() error { return w.WriteFile("pipe", "x\n") }},
		{"EditFile", func() error { _, err := w.EditFile("pipe", "x", "y", false); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := withinDeadline(t, fifo, tc.call)
			require.ErrorContains(t, err, "is a named pipe (FIFO); the file tools only handle regular files")
			fi, err := os.Lstat(fifo)
			require.NoError(t, err)
			require.NotZero(t, fi.Mode()&os.ModeNamedPipe, "the FIFO is left as it was")
		})
	}
	t.Run("SearchSkipsIt", func(t *testing.T) {
		var got string
		err := withinDeadline(t, fifo, func() (err error) {
			got, err = w.Search(context.Background(), "two", "", 0)
			return err
		})
		require.NoError(t, err)
		require.Contains(t, got, "a.txt:2: two")
		require.NotContains(t, got, "pipe")
	})
}

// withinDeadline runs call and returns its error, failing the test if it
// has not returned after a generous deadline. A call stuck opening the
// FIFO is then released by opening its other end, so that it does not
// outlive the test.
func withinDeadline(t *testing.T, fifo string, call func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		f, err := os.OpenFile(fifo, os.O_RDWR, 0)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		t.Fatalf("the call was still waiting on the FIFO after 10 s (released, it returned %v)", <-done)
		return nil
	}
}

// heapBound is the most the service may allocate to answer one call on a
// file or diff, whatever its size.
const heapBound = 64 << 20

// allocated returns how many bytes call allocated on the heap, in total:
// a bound on the peak it reached.
func allocated(t *testing.T, call func()) uint64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	call()
	runtime.ReadMemStats(&after)
	used := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %s (heap in use %s before, %s after)", formatBytes(int64(used)),
		formatBytes(int64(before.HeapInuse)), formatBytes(int64(after.HeapInuse)))
	return used
}

// read_file streams: a 2 GiB file, or a 200 MB line, costs the service
// no more than its buffers and the result.
func TestReadFileMemoryIsBounded(t *testing.T) {
	w, dir := fileWorkspace(t)
	sparse, err := os.Create(filepath.Join(dir, "zeros.bin"))
	require.NoError(t, err)
	require.NoError(t, sparse.Truncate(2<<30))
	require.NoError(t, sparse.Close())

	const lineBytes = 200 << 20
	long, err := os.Create(filepath.Join(dir, "long.txt"))
	require.NoError(t, err)
	chunk := bytes.Repeat([]byte("y"), 1<<20)
	for range lineBytes >> 20 {
		_, err := long.Write(chunk)
		require.NoError(t, err)
	}
	_, err = long.WriteString("\nsecond\nthird\n")
	require.NoError(t, err)
	require.NoError(t, long.Close())

	for _, tc := range []struct {
		name, path string
		offset     int
		want       string // the result, or the error
	}{
		{name: "SparseFile", path: "zeros.bin", want: "binary file"},
		{name: "OneHugeLine", path: "long.txt",
			want: "     1\t" + strings.Repeat("y", maxLineChars) + " [line cut: 209713200 more bytes]\n     2\tsecond\n     3\tthird\n"},
		{name: "AfterTheHugeLine", path: "long.txt", offset: 3, want: "     3\tthird\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			var err error
			used := allocated(t, func() { got, err = w.ReadFile(tc.path, tc.offset, 0) })
			require.Less(t, used, uint64(heapBound))
			if err != nil {
				got = err.Error()
			}
			require.Contains(t, got, tc.want)
		})
	}
	t.Run("ResultIsCappedAtTheOutputCap", func(t *testing.T) {
		var b strings.Builder
		for range 2000 {
			b.WriteString(strings.Repeat("z", 100) + "\n")
		}
		require.NoError(t, w.WriteFile("wide.txt", b.String()))
		got, err := w.ReadFile("wide.txt", 0, 0)
		require.NoError(t, err)
		require.LessOrEqual(t, len(got), defaultMaxOutputBytes+100)
		require.Regexp(t, `\n\[output cut at 64 KiB; read on from offset 6[0-9][0-9]\]\n$`, got)
	})
}

// git_diff streams git's output through the output cap, and says what it
// cut; any other git output the host reads whole is kept up to 8 MiB and
// refused past it, never held in full.
func TestGitOutputMemoryIsBounded(t *testing.T) {
	w, dir := fileWorkspace(t)
	ctx := context.Background()
	hostGit(t, dir, "add", "a.txt")
	hostGit(t, dir, "commit", "--quiet", "-m", "seed")
	// 96 MiB of changed lines: under git's big-file threshold, so it is
	// diffed as text.
	big, err := os.OpenFile(filepath.Join(dir, "a.txt"), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	chunk := []byte(strings.Repeat(strings.Repeat("x", 63)+"\n", 1<<14))
	for range 96 {
		_, err := big.Write(chunk)
		require.NoError(t, err)
	}
	require.NoError(t, big.Close())

	t.Run("Diff", func(t *testing.T) {
		var got string
		var err error
		used := allocated(t, func() { got, err = w.Diff(ctx, false) })
		require.NoError(t, err)
		require.Less(t, used, uint64(heapBound))
		require.Less(t, len(got), defaultMaxOutputBytes+200)
		require.Contains(t, got, "diff --git a/a.txt b/a.txt")
		require.Regexp(t, `\[\.\.\. output cut at 64 KiB of 9[0-9]\.[0-9] MiB: [0-9]+ bytes of output cut; showing the first 32768 and the last 32768 \.\.\.\]`, got)
	})
	t.Run("OutputReadWhole", func(t *testing.T) {
		var err error
		used := allocated(t, func() { _, err = w.git(ctx, "diff", "--no-ext-diff") })
		require.ErrorContains(t, err, "git diff: output over 8 MiB (9")
		require.Less(t, used, uint64(heapBound))
	})
}
