package feishu_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package on leaked goroutines, except the SDK's long
// connection ones: larkws.Client.Start never returns and its ping loop,
// receive loop, reconnect loop and cache cleaner have no way to stop (see
// LongConn.Run).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/larksuite/oapi-sdk-go/v3/ws.(*Client).Start"),
		goleak.IgnoreAnyFunction("github.com/larksuite/oapi-sdk-go/v3/ws.(*Client).pingLoop"),
		goleak.IgnoreAnyFunction("github.com/larksuite/oapi-sdk-go/v3/ws.(*Client).receiveMessageLoop"),
		goleak.IgnoreAnyFunction("github.com/larksuite/oapi-sdk-go/v3/ws.(*Client).reconnect"),
		goleak.IgnoreAnyFunction("github.com/larksuite/oapi-sdk-go/v3/cache.(*cron).start"),
	)
}
