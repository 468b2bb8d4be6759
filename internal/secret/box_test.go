package secret

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A sealed value opens only under its key and its label, and never holds
// the plain text.
func TestBoxSealsToItsLabel(t *testing.T) {
	raw := []byte(strings.Repeat("k", KeySize))
	for _, form := range []string{strings.Repeat("6b", KeySize), base64.StdEncoding.EncodeToString(raw), base64.RawURLEncoding.EncodeToString(raw)} {
		key, err := ParseKey(form)
		require.NoError(t, err, form)
		require.Equal(t, raw, key)
	}
	_, err := ParseKey("short")
	require.Error(t, err)

	box, err := NewBox(raw)
	require.NoError(t, err)
	sealed := box.Seal("the-plain-value", "repo_secrets:o/r:A")
	require.NotContains(t, sealed, "the-plain-value")
	require.NotEqual(t, sealed, box.Seal("the-plain-value", "repo_secrets:o/r:A"), "a fresh nonce each time")
	plain, err := box.Open(sealed, "repo_secrets:o/r:A")
	require.NoError(t, err)
	require.Equal(t, "the-plain-value", plain)
	_, err = box.Open(sealed, "repo_secrets:o/r:B")
	require.ErrorIs(t, err, ErrOpen, "copied to another row it does not open")
	other, err := NewBox([]byte(strings.Repeat("x", KeySize)))
	require.NoError(t, err)
	_, err = other.Open(sealed, "repo_secrets:o/r:A")
	require.ErrorIs(t, err, ErrOpen)
}
