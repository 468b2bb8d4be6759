package github

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Reaction is one reaction the fake holds.
type Reaction struct {
	// Subject is what was reacted to: issue:<owner/repo>#<n>,
	// issue_comment:<owner/repo>/<id> or pull_comment:<owner/repo>/<id>.
	Subject string
	Content string
	// Installation is the installation whose token added it.
	Installation int64
	at           time.Time
}

// reactionJSON is a reaction by the App's bot, from the published example.
func (s *Server) reactionJSON(id int, x Reaction) map[string]any {
	return overlay(s.canned("reaction"), map[string]any{
		"id": id, "node_id": "REA_" + strconv.Itoa(id), "content": x.Content, "user": s.userJSON(s.botLogin()),
		"created_at": x.at.Format(time.RFC3339),
	})
}

// Comment is one issue or pull request comment the fake holds.
type Comment struct {
	ID     int64
	Repo   string
	Number int
	Body   string
	// Login wrote it: the App's bot (Slug+"[bot]") for comments posted with
	// an installation token, else the login given to AddComment.
	Login     string
	CreatedAt time.Time
	// UpdatedAt is when it was last edited (CreatedAt until then); Edits
	// counts the edits.
	UpdatedAt time.Time
	Edits     int
}

type conversation struct {
	mu        sync.Mutex
	served    bool
	reactions []Reaction
	comments  []Comment
}

// ServeConversations adds reactions (on issues, issue comments and pull
// request review comments) and issue comments to the fake. It is opt-in so
// tests that Handle these routes themselves keep working. Like GitHub, a
// second identical reaction by the same installation answers 200 with the
// first and adds nothing.
func (s *Server) ServeConversations() {
	c := s.conv
	c.mu.Lock()
	served := c.served
	c.served = true
	c.mu.Unlock()
	if served {
		return
	}
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
					WriteJSON(w, http.StatusOK, s.reactionJSON(i+1, x))
					return
				}
			}
			c.reactions = append(c.reactions, Reaction{Subject: subject, Content: body.Content, Installation: inst, at: time.Now().UTC().Truncate(time.Second)})
			WriteJSON(w, http.StatusCreated, s.reactionJSON(len(c.reactions), c.reactions[len(c.reactions)-1]))
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
		cm := s.addComment(r.PathValue("owner")+"/"+r.PathValue("repo"), n, s.botLogin(), body.Body)
		WriteJSON(w, http.StatusCreated, s.commentJSON(cm))
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

// AddComment adds a comment by login (a person, or a bot such as
// "ci[bot]") on issue or pull request number of fullName and returns its
// id. It is listed by GET /repos/{owner}/{repo}/issues/{number}/comments
// and returned by Comments.
func (s *Server) AddComment(fullName string, number int, login, body string) int64 {
	return s.addComment(fullName, number, login, body).ID
}

func (s *Server) addComment(repo string, number int, login, body string) Comment {
	c := s.conv
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now().UTC().Truncate(time.Second)
	cm := Comment{ID: int64(9000 + len(c.comments) + 1), Repo: repo, Number: number, Body: body, Login: login, CreatedAt: now, UpdatedAt: now}
	c.comments = append(c.comments, cm)
	return cm
}

// commentJSON is an issue comment, from the published example.
func (s *Server) commentJSON(c Comment) map[string]any {
	url := "https://github.com/" + c.Repo + "/issues/" + strconv.Itoa(c.Number)
	assoc := "COLLABORATOR"
	if strings.HasSuffix(c.Login, "[bot]") {
		assoc = "NONE"
	}
	m := s.canned("issue-comment")
	return overlay(m, map[string]any{
		"id": c.ID, "node_id": "IC_" + strconv.FormatInt(c.ID, 10), "body": c.Body,
		"url":                s.URL + "/repos/" + c.Repo + "/issues/comments/" + strconv.FormatInt(c.ID, 10),
		"user":               s.userJSON(c.Login),
		"html_url":           url + "#issuecomment-" + strconv.FormatInt(c.ID, 10),
		"issue_url":          s.URL + "/repos/" + c.Repo + "/issues/" + strconv.Itoa(c.Number),
		"author_association": assoc,
		"created_at":         c.CreatedAt.Format(time.RFC3339), "updated_at": c.UpdatedAt.Format(time.RFC3339),
	})
}
