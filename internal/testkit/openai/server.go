// Package openai is a fake OpenAI-compatible chat completions server for
// tests: a real HTTP server (httptest) that speaks the wire format, plays a
// script of replies (text, tool calls, reasoning, usage in several
// providers' shapes, errors with Retry-After, slow or hanging answers, and
// the unusable answers real providers send: no choices, a refusal, a cut at
// the output limit) and
// records every request for assertions. Import it as fakeopenai.
//
// Only non-streaming requests are supported: a request with "stream": true
// is answered with 400.
package openai

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a running fake. Point a client at URL().
type Server struct {
	t        testing.TB
	srv      *httptest.Server
	done     chan struct{}
	mu       sync.Mutex
	script   []Reply
	fallback *Reply
	requests []Request
	n        int
}

// New starts a fake that will answer with replies in order. It stops when
// the test ends.
func New(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	s := &Server{t: t, done: make(chan struct{}), script: replies}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		close(s.done)
		s.srv.Close()
	})
	return s
}

// URL is the base URL to configure a client with (it ends in /v1).
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Push appends replies to the script.
func (s *Server) Push(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, replies...)
}

// Fallback sets the reply used once the script is exhausted. Without one an
// unscripted request fails the test and gets a 500.
func (s *Server) Fallback(r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fallback = &r
}

// Pending is the number of scripted replies not yet played.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script)
}

// Requests returns every request received so far, in order, failed ones
// included.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Last returns the latest request; it fails the test when there is none.
func (s *Server) Last() Request {
	s.t.Helper()
	reqs := s.Requests()
	if len(reqs) == 0 {
		s.t.Fatalf("fake model server: no request received")
	}
	return reqs[len(reqs)-1]
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		writeError(w, http.StatusNotFound, "not_found", "the fake serves POST /v1/chat/completions only")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	req, err := decodeRequest(body, r.Header)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.n++
	n := s.n
	var reply Reply
	switch {
	case len(s.script) > 0:
		reply, s.script = s.script[0], s.script[1:]
	case s.fallback != nil:
		reply = *s.fallback
	default:
		s.mu.Unlock()
		s.t.Errorf("fake model server: request %d has no scripted reply (last message: %q)", n, req.LastMessage().Content)
		writeError(w, http.StatusInternalServerError, "server_error", "no scripted reply")
		return
	}
	s.mu.Unlock()

	if reply.Func != nil {
		reply = reply.Func(req)
	}
	if req.Stream {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "the fake does not stream")
		return
	}
	if reply.Hang || reply.Delay > 0 {
		var timeout <-chan time.Time
		if !reply.Hang {
			t := time.NewTimer(reply.Delay)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case <-timeout:
		}
	}
	for k, v := range reply.Header {
		w.Header().Set(k, v)
	}
	status := reply.Status
	if status == 0 {
		status = http.StatusOK
	}
	if reply.Body != "" || status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		b := reply.Body
		if b == "" {
			b = errorBody("server_error", fmt.Sprintf("scripted status %d", status))
		}
		_, _ = io.WriteString(w, b)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(completion(n, req, reply))
}

func completion(n int, req Request, r Reply) map[string]any {
	msg := map[string]any{"role": "assistant", "content": r.Content, "refusal": nil}
	if r.Content == "" && (len(r.ToolCalls) > 0 || r.Refusal != "") {
		msg["content"] = nil
	}
	if r.Refusal != "" {
		msg["refusal"] = r.Refusal
	}
	if r.Reasoning != "" {
		field := r.ReasoningField
		if field == "" {
			field = "reasoning_content"
		}
		msg[field] = r.Reasoning
	}
	finish := r.FinishReason
	if len(r.ToolCalls) > 0 {
		calls := make([]map[string]any, len(r.ToolCalls))
		for i, c := range r.ToolCalls {
			id := c.ID
			if id == "" {
				id = fmt.Sprintf("call_%d_%d", n, i)
			}
			calls[i] = map[string]any{"id": id, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments}}
		}
		msg["tool_calls"] = calls
		if finish == "" {
			finish = "tool_calls"
		}
	}
	if finish == "" {
		finish = "stop"
	}
	usage := r.Usage
	if usage == nil {
		usage = UsageOpenAI(100, 0, 10)
	}
	model := r.Model
	if model == "" {
		model = req.Model
	}
	choices := []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}}
	if r.NoChoices {
		// What providers send for a generation they dropped (a content
		// filter on the prompt, an upstream failure behind a gateway).
		choices = []any{}
	}
	return map[string]any{
		"id":      fmt.Sprintf("chatcmpl-fake-%d", n),
		"object":  "chat.completion",
		"created": 1700000000 + n,
		"model":   model,
		"choices": choices,
		"usage":   usage,
	}
}

func errorBody(kind, message string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": kind, "code": nil, "param": nil}})
	return string(b)
}

func writeError(w http.ResponseWriter, status int, kind, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, errorBody(kind, message))
}
