// Package feishu speaks to Feishu (Lark): it verifies and decrypts the events
// Feishu posts to POST /webhooks/feishu, parses them into a neutral Event,
// receives the same events over the SDK's long connection, and sends messages
// and reactions through the Open API.
//
// Inbound, a Verifier authenticates a request (signature, timestamp window,
// verification token) and returns the decrypted JSON; Parse turns that JSON
// into an Event. The long connection delivers the same decrypted JSON, so one
// parser serves both paths.
//
// Outbound, a Client wraps the official SDK (github.com/larksuite/oapi-sdk-go/v3)
// and adds what the SDK leaves out: API failures become Go errors, rate limits
// are waited out, every message carries an idempotency uuid, untrusted text
// cannot mention people, and oversized content is refused instead of cut.
package feishu
