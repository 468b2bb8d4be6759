package bodycodec

import (
	"bytes"
	"crypto/rand"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPackRoundTrip(t *testing.T) {
	t.Parallel()
	payload, err := os.ReadFile("../../webhooks/testdata/github/issue_comment/created.payload.json")
	require.NoError(t, err)
	random := make([]byte, 4096)
	_, _ = rand.Read(random)
	for name, c := range map[string]struct {
		body     []byte
		encoding string
	}{
		"a webhook payload":   {payload, Zstd},
		"a small body":        {[]byte(`{"action":"created"}`), Identity},
		"no body":             {nil, Identity},
		"incompressible":      {random, Identity},
		"just above the size": {bytes.Repeat([]byte("a"), minSize), Zstd},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, encoding := Pack(c.body)
			require.Equal(t, c.encoding, encoding)
			if encoding == Zstd {
				require.Less(t, len(data), len(c.body)-len(c.body)/8)
			}
			back, err := Unpack(data, encoding)
			require.NoError(t, err)
			require.Equal(t, string(c.body), string(back))
		})
	}
}

func TestUnpackRefuses(t *testing.T) {
	t.Parallel()
	_, err := Unpack([]byte("{}"), "gzip")
	require.ErrorIs(t, err, ErrUnknownEncoding)
	require.ErrorContains(t, err, `"gzip"`)

	_, err = Unpack([]byte("{}"), Zstd)
	require.ErrorContains(t, err, "decompressing stored body")

	// A frame that grows past the limit is refused, not decoded.
	bomb, _ := Pack(make([]byte, 1<<20))
	_, err = unpack(mustDecoder(64<<10), bomb, Zstd)
	require.Error(t, err)
	back, err := unpack(mustDecoder(2<<20), bomb, Zstd)
	require.NoError(t, err)
	require.Len(t, back, 1<<20)
}

// BenchmarkPack is what the request goroutine pays to spare the shared
// writer three pages of a typical payload.
func BenchmarkPack(b *testing.B) {
	payload, err := os.ReadFile("../../webhooks/testdata/github/issue_comment/created.payload.json")
	require.NoError(b, err)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		Pack(payload)
	}
}
