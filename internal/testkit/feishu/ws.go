package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	larkws "github.com/larksuite/oapi-sdk-go/v3/ws"
)

// Paths of the long connection: the SDK asks wsEndpointPath for a URL, then
// dials wsPath on the same server.
const (
	wsEndpointPath = "/callback/ws/endpoint"
	wsPath         = "/ws/v2"
)

type wsConn struct {
	conn *websocket.Conn
	wmu  sync.Mutex
}

func (c *wsConn) write(f *larkws.Frame) error {
	b, err := f.Marshal()
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.conn.WriteMessage(websocket.BinaryMessage, b)
}

type wsState struct {
	mu       sync.Mutex
	conns    []*wsConn
	connects int
	pings    int
	seq      int
	waiting  map[string]chan larkws.Response
	changed  chan struct{} // closed and replaced on every connect
	// published are the events sent with Publish, acknowledged or not.
	published []*published
	// reconnectCount and reconnectInterval are the ClientConfig handed out.
	reconnectCount, reconnectInterval int
}

func newWSState() *wsState {
	return &wsState{waiting: map[string]chan larkws.Response{}, changed: make(chan struct{}), reconnectCount: -1, reconnectInterval: 1}
}

func (st *wsState) closeAll() {
	st.mu.Lock()
	conns := st.conns
	st.conns = nil
	st.mu.Unlock()
	for _, c := range conns {
		_ = c.conn.Close()
		st.lost(c)
	}
}

// serveWSEndpoint answers the SDK's request for a connection URL, with a
// client config that reconnects quickly and without jitter.
func (s *Server) serveWSEndpoint(w http.ResponseWriter, r *http.Request) {
	s.ws.mu.Lock()
	s.ws.seq++
	n, count, interval := s.ws.seq, s.ws.reconnectCount, s.ws.reconnectInterval
	s.ws.mu.Unlock()
	u := "ws" + strings.TrimPrefix(s.URL, "http") + wsPath + "?device_id=fake-device-" + strconv.Itoa(n) + "&service_id=1"
	writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "ok", "data": map[string]any{
		"URL": u,
		"ClientConfig": map[string]any{
			"ReconnectCount": count, "ReconnectInterval": interval, "ReconnectNonce": 0, "PingInterval": 120,
		},
	}})
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &wsConn{conn: conn}
	st := s.ws
	st.mu.Lock()
	st.conns = append(st.conns, c)
	st.connects++
	close(st.changed)
	st.changed = make(chan struct{})
	st.mu.Unlock()
	go st.readLoop(c)
	st.flush()
}

func (st *wsState) readLoop(c *wsConn) {
	defer func() {
		_ = c.conn.Close()
		st.mu.Lock()
		for i, x := range st.conns {
			if x == c {
				st.conns = append(st.conns[:i], st.conns[i+1:]...)
				break
			}
		}
		st.mu.Unlock()
		st.lost(c)
		st.flush()
	}()
	for {
		_, msg, err := c.conn.ReadMessage()
		if err != nil {
			return
		}
		var f larkws.Frame
		if f.Unmarshal(msg) != nil {
			continue
		}
		hs := larkws.Headers(f.Headers)
		switch {
		case larkws.FrameType(f.Method) == larkws.FrameTypeControl && hs.GetString(larkws.HeaderType) == string(larkws.MessageTypePing):
			st.mu.Lock()
			st.pings++
			st.mu.Unlock()
			pong := &larkws.Frame{Service: f.Service, Method: int32(larkws.FrameTypeControl)}
			pong.Headers = append(pong.Headers, larkws.Header{Key: larkws.HeaderType, Value: string(larkws.MessageTypePong)})
			_ = c.write(pong)
		case larkws.FrameType(f.Method) == larkws.FrameTypeData:
			var resp larkws.Response
			_ = json.Unmarshal(f.Payload, &resp)
			id := hs.GetString(larkws.HeaderMessageID)
			st.mu.Lock()
			ch := st.waiting[id]
			delete(st.waiting, id)
			st.mu.Unlock()
			if ch != nil {
				ch <- resp
			}
			st.acked(id, resp.StatusCode)
		}
	}
}

// Connects returns how many long connections were opened so far.
func (s *Server) Connects() int {
	s.ws.mu.Lock()
	defer s.ws.mu.Unlock()
	return s.ws.connects
}

// WaitConnects waits until at least n long connections were opened.
func (s *Server) WaitConnects(ctx context.Context, n int) error {
	for {
		s.ws.mu.Lock()
		got, changed := s.ws.connects, s.ws.changed
		s.ws.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for long connection %d (have %d): %w", n, got, ctx.Err())
		}
	}
}

// SetReconnect changes the ClientConfig the endpoint hands out from now
// on: the SDK retries count times (-1, the default: forever) interval
// seconds apart (default 1) after a connection drops, then gives up.
func (s *Server) SetReconnect(count, interval int) {
	s.ws.mu.Lock()
	defer s.ws.mu.Unlock()
	s.ws.reconnectCount, s.ws.reconnectInterval = count, interval
}

// DropConnections closes every open long connection, as a network failure would.
func (s *Server) DropConnections() { s.ws.closeAll() }

// PushEvent sends payload (event JSON as Feishu delivers it) over the open
// long connection, split into parts frames (1 if < 1), and returns the status
// code the client answered with (200 handled, 500 failed).
func (s *Server) PushEvent(ctx context.Context, payload []byte, parts int) (int, error) {
	resp, err := s.push(ctx, payload, parts)
	return resp.StatusCode, err
}

// PushCallback sends a callback (a card.action.trigger) over the open long
// connection and returns the status code and the body the client answered
// with, e.g. {"toast":{…}}.
func (s *Server) PushCallback(ctx context.Context, payload []byte) (int, []byte, error) {
	resp, err := s.push(ctx, payload, 1)
	return resp.StatusCode, resp.Data, err
}

func (s *Server) push(ctx context.Context, payload []byte, parts int) (larkws.Response, error) {
	st := s.ws
	st.mu.Lock()
	if len(st.conns) == 0 {
		st.mu.Unlock()
		return larkws.Response{}, errors.New("no long connection open")
	}
	c := st.conns[len(st.conns)-1]
	st.seq++
	id := "fake-event-" + strconv.Itoa(st.seq)
	ch := make(chan larkws.Response, 1)
	st.waiting[id] = ch
	st.mu.Unlock()

	if parts < 1 {
		parts = 1
	}
	size := (len(payload) + parts - 1) / parts
	for i := 0; i < parts; i++ {
		lo, hi := i*size, min((i+1)*size, len(payload))
		f := &larkws.Frame{SeqID: uint64(i), Service: 1, Method: int32(larkws.FrameTypeData), Payload: payload[lo:hi]}
		for k, v := range map[string]string{
			larkws.HeaderType: string(larkws.MessageTypeEvent), larkws.HeaderMessageID: id,
			larkws.HeaderSum: strconv.Itoa(parts), larkws.HeaderSeq: strconv.Itoa(i),
			larkws.HeaderTraceID: "trace-" + id, larkws.HeaderTimestamp: strconv.FormatInt(time.Now().UnixMilli(), 10),
		} {
			f.Headers = append(f.Headers, larkws.Header{Key: k, Value: v})
		}
		if err := c.write(f); err != nil {
			return larkws.Response{}, fmt.Errorf("writing event frame: %w", err)
		}
	}
	select {
	case resp := <-ch:
		return resp, nil
	case <-ctx.Done():
		return larkws.Response{}, fmt.Errorf("waiting for the event's response: %w", ctx.Err())
	}
}
