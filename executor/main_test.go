package executor_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves goroutines behind: an
// Executor's lease renewal, a sandboxed command or a model stream that
// outlives its job.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
