package webhooks_test

import (
	"testing"

	"go.uber.org/goleak"

	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
)

// TestMain fails the package when a test leaves goroutines behind, except
// the SDK's long connection ones (TestLongConnCutMidBurst), which cannot be
// stopped (see feishu.LongConn.Run).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, fakefeishu.SDKGoroutines()...)
}
