package promptparts

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every part this release ships has a one-line description for the
// panel's parts list; a new part without one fails here.
func TestEveryPartIsDescribed(t *testing.T) {
	reg, err := NewRegistry(BuiltinDefaults())
	require.NoError(t, err)
	for _, key := range reg.Keys() {
		d := Describe(key)
		require.NotEmpty(t, d, key)
		require.NotContains(t, d, "\n", key)
		require.LessOrEqual(t, len(d), 100, key)
		require.True(t, strings.HasSuffix(d, "."), key)
	}
}
