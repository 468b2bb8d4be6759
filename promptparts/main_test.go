package promptparts

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind, such as
// a revision listener that was not stopped.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
