package feishu

import (
	"strconv"
	"time"

	larkws "github.com/larksuite/oapi-sdk-go/v3/ws"
)

// published is an event sent with Publish, kept until the app acknowledges
// it as Feishu keeps an event it has no answer for.
type published struct {
	id      string
	payload []byte
	on      *wsConn // the connection it was last sent on, nil when none
	acked   bool
	sends   int
}

// Publish sends payload (event JSON) as Feishu does: on the newest long
// connection, or on the next one opened when none is; and again on the next
// connection when the app did not acknowledge it (the connection dropped
// first, or the app answered other than 200). Feishu redelivers such events
// with the same event_id, and so does the fake.
func (s *Server) Publish(payload []byte) {
	st := s.ws
	st.mu.Lock()
	st.seq++
	st.published = append(st.published, &published{id: "fake-pub-" + strconv.Itoa(st.seq), payload: payload})
	st.mu.Unlock()
	st.flush()
}

// Unacknowledged returns how many published events wait for a 200.
func (s *Server) Unacknowledged() int {
	s.ws.mu.Lock()
	defer s.ws.mu.Unlock()
	n := 0
	for _, p := range s.ws.published {
		if !p.acked {
			n++
		}
	}
	return n
}

// Redeliveries returns how many sends of published events were repeats.
func (s *Server) Redeliveries() int {
	s.ws.mu.Lock()
	defer s.ws.mu.Unlock()
	n := 0
	for _, p := range s.ws.published {
		n += max(p.sends-1, 0)
	}
	return n
}

// flush sends every unacknowledged published event that is not in flight
// on the newest connection.
func (st *wsState) flush() {
	st.mu.Lock()
	if len(st.conns) == 0 {
		st.mu.Unlock()
		return
	}
	c := st.conns[len(st.conns)-1]
	var send []*published
	for _, p := range st.published {
		if !p.acked && p.on == nil {
			p.on = c
			p.sends++
			send = append(send, p)
		}
	}
	st.mu.Unlock()
	for _, p := range send {
		f := &larkws.Frame{Service: 1, Method: int32(larkws.FrameTypeData), Payload: p.payload}
		for k, v := range map[string]string{
			larkws.HeaderType: string(larkws.MessageTypeEvent), larkws.HeaderMessageID: p.id,
			larkws.HeaderSum: "1", larkws.HeaderSeq: "0",
			larkws.HeaderTraceID: "trace-" + p.id, larkws.HeaderTimestamp: strconv.FormatInt(time.Now().UnixMilli(), 10),
		} {
			f.Headers = append(f.Headers, larkws.Header{Key: k, Value: v})
		}
		if c.write(f) != nil {
			st.lost(c)
			return
		}
	}
}

// acked records the app's answer to a published event: a 200 settles it;
// any other answer leaves it for the next connection.
func (st *wsState) acked(id string, status int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, p := range st.published {
		if p.id == id {
			if status == 200 {
				p.acked = true
			} else {
				p.on = nil
			}
		}
	}
}

// lost forgets what was in flight on c: it was never answered.
func (st *wsState) lost(c *wsConn) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, p := range st.published {
		if p.on == c && !p.acked {
			p.on = nil
		}
	}
}
