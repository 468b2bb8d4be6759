package feishu_test

import (
	"encoding/base64"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/feishu"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
)

const (
	testEncryptKey = "superagent-test-key"
	testToken      = "rvaYgkND1GOiu5MM0E1rncYC6PLtF7JV" // the token in the fixtures
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	return b
}

func TestDecryptKnownVectors(t *testing.T) {
	// From Feishu's documentation: Encrypt Key "test key".
	got, err := feishu.Decrypt("P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk=", "test key")
	require.NoError(t, err)
	require.Equal(t, "hello world", string(got))

	// Computed with openssl (see testdata/README.md): the url_verification
	// fixture, key SHA-256("superagent-test-key"), IV 00..0f.
	enc := strings.TrimSpace(string(readFixture(t, "url_verification.encrypted.b64")))
	got, err = feishu.Decrypt(enc, testEncryptKey)
	require.NoError(t, err)
	require.Equal(t, string(readFixture(t, "url_verification.json")), string(got))

	// The fake's independent encryption produces the same bytes.
	iv := []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	require.Equal(t, enc, fakefeishu.EncryptWithIV(testEncryptKey, iv, readFixture(t, "url_verification.json")))
}

func TestDecryptRoundTrip(t *testing.T) {
	for _, size := range []int{0, 1, 15, 16, 17, 31, 32, 1000} {
		plain := []byte(strings.Repeat("x", size))
		got, err := feishu.Decrypt(fakefeishu.Encrypt(testEncryptKey, plain), testEncryptKey)
		require.NoError(t, err, "size %d", size)
		require.Equal(t, plain, got)
	}
}

func TestDecryptRejectsBadInput(t *testing.T) {
	// A fixed IV keeps the cases deterministic: with a random one, a wrong
	// key or a flipped bit yields valid padding about once in 256 runs.
	good := fakefeishu.EncryptWithIV(testEncryptKey, make([]byte, 16), []byte(`{"hello":"world"}`))
	raw, err := base64.StdEncoding.DecodeString(good)
	require.NoError(t, err)
	flip := func(i int) string {
		b := append([]byte(nil), raw...)
		b[i] ^= 0x01
		return base64.StdEncoding.EncodeToString(b)
	}
	// A valid ciphertext of bytes whose last block pads with 0x00.
	zeroPad := func() string {
		return fakefeishu.EncryptWithIV(testEncryptKey, make([]byte, 16), []byte("0123456789abcdef"))
	}()
	zraw, _ := base64.StdEncoding.DecodeString(zeroPad)

	tests := []struct {
		name string
		in   string
		key  string
	}{
		{"bad base64", "not base64!!", testEncryptKey},
		{"empty", "", testEncryptKey},
		{"only an IV", base64.StdEncoding.EncodeToString(make([]byte, 16)), testEncryptKey},
		{"not whole blocks", base64.StdEncoding.EncodeToString(make([]byte, 40)), testEncryptKey},
		{"wrong key", good, "another key"},
		{"tampered last block", flip(len(raw) - 1), testEncryptKey},
		{"tampered padding byte", base64.StdEncoding.EncodeToString(append(append([]byte(nil), zraw[:len(zraw)-1]...), zraw[len(zraw)-1]^0x10)), testEncryptKey},
		{"zeros", base64.StdEncoding.EncodeToString(make([]byte, 48)), testEncryptKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NotPanics(t, func() {
				_, err := feishu.Decrypt(tt.in, tt.key)
				require.Error(t, err)
			})
		})
	}
}

func TestSignature(t *testing.T) {
	// Computed with sha256sum over the concatenation.
	require.Equal(t, "66603bc5063ed503714f6a59b77c564fffead4ccb5bde5ba33f96fff937ca2d9",
		feishu.Signature("1700000000", "nonce-1", testEncryptKey, []byte(`{"encrypt":"abc"}`)))
	require.Equal(t, fakefeishu.Sign("1", "n", "k", []byte("body")), feishu.Signature("1", "n", "k", []byte("body")))
}

func TestEncryptOpensWithDecrypt(t *testing.T) {
	for _, plain := range []string{"", "x", "exactly sixteen!", `{"schema":"2.0","header":{"event_id":"e1"}}`} {
		enc, err := feishu.Encrypt([]byte(plain), "an encrypt key")
		require.NoError(t, err)
		got, err := feishu.Decrypt(enc, "an encrypt key")
		require.NoError(t, err)
		require.Equal(t, plain, string(got))
	}
}
