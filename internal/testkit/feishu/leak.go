package feishu

import "go.uber.org/goleak"

// SDKGoroutines are goleak options ignoring the goroutines of the SDK's
// long connection, for the TestMain of packages that run one: its Start
// never returns and its ping, receive and reconnect loops and token cache
// cleaner have no way to stop (see feishu.LongConn.Run).
func SDKGoroutines() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("github.com/larksuite/oapi-sdk-go/v3/ws.(*Client).Start"),
		goleak.IgnoreAnyFunction("github.com/larksuite/oapi-sdk-go/v3/ws.(*Client).pingLoop"),
		goleak.IgnoreAnyFunction("github.com/larksuite/oapi-sdk-go/v3/ws.(*Client).receiveMessageLoop"),
		goleak.IgnoreAnyFunction("github.com/larksuite/oapi-sdk-go/v3/ws.(*Client).reconnect"),
		goleak.IgnoreAnyFunction("github.com/larksuite/oapi-sdk-go/v3/cache.(*cron).start"),
	}
}
