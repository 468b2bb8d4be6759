package webhooks

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

// A body comes back whole whatever its request claimed, read at once or a
// byte at a time, and a claim reserves no more than claimedUpTo.
func TestReadAllKeepsWhatArrives(t *testing.T) {
	t.Parallel()
	body := bytes.Repeat([]byte("0123456789abcdef"), 3000) // 48 KB, over claimedUpTo
	for _, tc := range []struct {
		name     string
		n, claim int // bytes sent, bytes the request claims
		read     func(io.Reader) io.Reader
	}{
		{"exactly the claim", 10 << 10, 10 << 10, nil},
		{"more than the claim", 9 << 10, 1 << 10, nil},
		{"less than the claim", 3 << 10, 32 << 10, nil},
		{"no claim", 6 << 10, 0, nil},
		{"empty", 0, 0, nil},
		{"past claimedUpTo", len(body), len(body), nil},
		{"a byte at a time", 5 << 10, 5 << 10, iotest.OneByteReader},
		{"with its last bytes and EOF together", 7 << 10, 7 << 10, iotest.DataErrReader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := body[:tc.n]
			var rd io.Reader = bytes.NewReader(want)
			if tc.read != nil {
				rd = tc.read(rd)
			}
			got, err := readAll(rd, min(int64(tc.claim), claimedUpTo))
			require.NoError(t, err)
			require.Equal(t, len(want), len(got))
			require.True(t, bytes.Equal(want, got))
		})
	}
	t.Run("an error ends the read", func(t *testing.T) {
		broken := errors.New("connection reset")
		_, err := readAll(io.MultiReader(strings.NewReader("partial"), iotest.ErrReader(broken)), 100)
		require.ErrorIs(t, err, broken)
	})
	t.Run("a claim of 20 MB reserves at most claimedUpTo before its bytes arrive", func(t *testing.T) {
		req := httptest.NewRequest(http.MethodPost, "/webhooks/github", strings.NewReader(`{"zen":"short"}`))
		req.ContentLength = 20 << 20
		got, err := readBody(httptest.NewRecorder(), req, 25<<20)
		require.NoError(t, err)
		require.JSONEq(t, `{"zen":"short"}`, string(got))
		require.LessOrEqual(t, cap(got), claimedUpTo+1)
	})
}
