package bodycodec

import (
	"bytes"
	"crypto/rand"
	"os"
	"testing"

	"github.com/klauspost/compress/zstd"
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
		"a webhook payload":   {payload, S2},
		"a small body":        {[]byte(`{"action":"created"}`), Identity},
		"no body":             {nil, Identity},
		"incompressible":      {random, Identity},
		"just above the size": {bytes.Repeat([]byte("a"), minSize), S2},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, encoding := Pack(c.body)
			require.Equal(t, c.encoding, encoding)
			if encoding == S2 {
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

	for _, encoding := range []string{Zstd, S2} {
		_, err = Unpack([]byte("{}"), encoding)
		require.ErrorContains(t, err, "decompressing stored body", encoding)
	}

	// A block that grows past the limit is refused, not decoded.
	bomb, encoding := Pack(make([]byte, 1<<20))
	require.Equal(t, S2, encoding)
	_, err = unpack(decoder, 64<<10, bomb, S2)
	require.ErrorContains(t, err, "above the 65536 allowed")
	back, err := unpack(decoder, 2<<20, bomb, S2)
	require.NoError(t, err)
	require.Len(t, back, 1<<20)

	// So is a zstd frame, as an earlier release stored it.
	old := zstdFrame(t, make([]byte, 1<<20))
	_, err = unpack(mustDecoder(64<<10), 64<<10, old, Zstd)
	require.Error(t, err)
	back, err = unpack(mustDecoder(2<<20), 2<<20, old, Zstd)
	require.NoError(t, err)
	require.Len(t, back, 1<<20)
}

// A body whose bytes changed after it was stored is refused: the S2 block
// may still decode, to something that is not what was received.
func TestUnpackChecksTheBody(t *testing.T) {
	t.Parallel()
	payload, err := os.ReadFile("../../webhooks/testdata/github/issue_comment/created.payload.json")
	require.NoError(t, err)
	data, encoding := Pack(payload)
	require.Equal(t, S2, encoding)
	// A literal byte of the first block element, which any decoder
	// accepts changed.
	damaged := bytes.Clone(data)
	damaged[crcSize+8] ^= 0x01
	_, err = Unpack(damaged, S2)
	require.ErrorContains(t, err, "checksum mismatch")
	damaged = bytes.Clone(data)
	damaged[0] ^= 0x01
	_, err = Unpack(damaged, S2)
	require.ErrorContains(t, err, "checksum mismatch")
	_, err = Unpack(data[:crcSize+len(data)/2], S2)
	require.ErrorContains(t, err, "decompressing stored body")
}

// Rows an earlier release stored as zstd frames read back as they were.
func TestUnpackReadsZstdRows(t *testing.T) {
	t.Parallel()
	payload, err := os.ReadFile("../../webhooks/testdata/github/issue_comment/created.payload.json")
	require.NoError(t, err)
	back, err := Unpack(zstdFrame(t, payload), Zstd)
	require.NoError(t, err)
	require.Equal(t, string(payload), string(back))
}

// zstdFrame is body as releases before S2 stored it.
func zstdFrame(t *testing.T, body []byte) []byte {
	t.Helper()
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(true))
	require.NoError(t, err)
	defer e.Close()
	return e.EncodeAll(body, nil)
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
