package feishu

import (
	"encoding/json"

	larkevent "github.com/larksuite/oapi-sdk-go/v3/event"
)

// EventV2 returns a schema 2.0 event body as Feishu posts it (before
// encryption), built from the SDK's own types: the envelope is
// larkevent.EventV2Base around h, and event is the SDK's event data (e.g.
// *larkim.P2MessageReceiveV1Data), so a test cannot invent a field the
// platform does not send.
func EventV2(h larkevent.EventHeader, event any) []byte {
	return mustJSON(struct {
		*larkevent.EventV2Base
		Event any `json:"event"`
	}{EventV2Base: &larkevent.EventV2Base{Schema: "2.0", Header: &h}, Event: event})
}

// EventV1 returns a schema 1.0 event body, as apps set up before schema
// 2.0 still receive: larkevent.EventBase (ts, uuid, token, type
// "event_callback" when empty) around event (e.g.
// *larkim.P1MessageReceiveV1Data).
func EventV1(base larkevent.EventBase, event any) []byte {
	if base.Type == "" {
		base.Type = "event_callback"
	}
	return mustJSON(struct {
		*larkevent.EventBase
		Event any `json:"event"`
	}{EventBase: &base, Event: event})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // the SDK's types always encode
	}
	return b
}
