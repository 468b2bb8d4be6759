package github

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
)

// Reaction is one reaction the fake holds.
type Reaction struct {
	// Subject is what was reacted to: issue:<owner/repo>#<n>,
	// issue_comment:<owner/repo>/<id> or pull_comment:<owner/repo>/<id>.
	Subject string
	Content string
	// Installation is the installation whose token added it.
	Installation int64
}

// Comment is one issue or pull request comment the fake holds.
type Comment struct {
	ID     int64
	Repo   string
	Number int
	Body   string
}

type conversation struct {
	mu        sync.Mutex
	reactions []Reaction
	comments  []Comment
}

// ServeConversations adds reactions (on issues, issue comments and pull
// request review comments) and issue comments to the fake. It is opt-in so
// tests that Handle these routes themselves keep working. Like GitHub, a
// second identical reaction by the same installation answers 200 with the
// first and adds nothing.
func (s *Server) ServeConversations() {
	c := &conversation{}
	s.conv = c
	react := func(kind string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			inst, ok := s.Authorize(w, r)
			if !ok {
				return
			}
			var body struct {
				Content string `json:"content"`
			}
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Content == "" {
				WriteError(w, http.StatusUnprocessableEntity, "Validation Failed")
				return
			}
			repo := r.PathValue("owner") + "/" + r.PathValue("repo")
			subject := kind + ":" + repo + "/" + r.PathValue("id")
			if kind == "issue" {
				subject = "issue:" + repo + "#" + r.PathValue("number")
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			for i, x := range c.reactions {
				if x.Subject == subject && x.Content == body.Content && x.Installation == inst {
					WriteJSON(w, http.StatusOK, map[string]any{"id": i + 1, "content": x.Content})
					return
				}
			}
			c.reactions = append(c.reactions, Reaction{Subject: subject, Content: body.Content, Installation: inst})
			WriteJSON(w, http.StatusCreated, map[string]any{"id": len(c.reactions), "content": body.Content})
		}
	}
	s.mux.HandleFunc("POST /repos/{owner}/{repo}/issues/{number}/reactions", react("issue"))
	s.mux.HandleFunc("POST /repos/{owner}/{repo}/issues/comments/{id}/reactions", react("issue_comment"))
	s.mux.HandleFunc("POST /repos/{owner}/{repo}/pulls/comments/{id}/reactions", react("pull_comment"))
	s.mux.HandleFunc("POST /repos/{owner}/{repo}/issues/{number}/comments", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.Authorize(w, r); !ok {
			return
		}
		var body struct {
			Body string `json:"body"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Body == "" {
			WriteError(w, http.StatusUnprocessableEntity, "Validation Failed")
			return
		}
		n, err := strconv.Atoi(r.PathValue("number"))
		if err != nil {
			WriteError(w, http.StatusNotFound, "Not Found")
			return
		}
		c.mu.Lock()
		id := int64(9000 + len(c.comments) + 1)
		c.comments = append(c.comments, Comment{ID: id, Repo: r.PathValue("owner") + "/" + r.PathValue("repo"), Number: n, Body: body.Body})
		c.mu.Unlock()
		WriteJSON(w, http.StatusCreated, map[string]any{"id": id, "body": body.Body,
			"html_url": "https://github.com/" + r.PathValue("owner") + "/" + r.PathValue("repo") + "/issues/" + r.PathValue("number") + "#issuecomment-" + strconv.FormatInt(id, 10)})
	})
}

// Reactions returns the reactions held (ServeConversations).
func (s *Server) Reactions() []Reaction {
	if s.conv == nil {
		return nil
	}
	s.conv.mu.Lock()
	defer s.conv.mu.Unlock()
	return append([]Reaction(nil), s.conv.reactions...)
}

// Comments returns the comments created (ServeConversations).
func (s *Server) Comments() []Comment {
	if s.conv == nil {
		return nil
	}
	s.conv.mu.Lock()
	defer s.conv.mu.Unlock()
	return append([]Comment(nil), s.conv.comments...)
}
