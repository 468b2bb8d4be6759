package feishu_test

import (
	"testing"

	"go.uber.org/goleak"

	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
)

// TestMain fails the package on leaked goroutines, except the SDK's long
// connection ones, which cannot be stopped (see LongConn.Run).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, fakefeishu.SDKGoroutines()...)
}
