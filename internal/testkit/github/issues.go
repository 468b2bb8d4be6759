package github

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

type issue struct {
	number             int
	title, body, login string
	state              string
	created            time.Time
}

// AddIssue adds open issue number to fullName, written by login, and
// serves it (ServeRepositories). The repository needs no AddRepo.
func (s *Server) AddIssue(fullName string, number int, title, body, login string) {
	s.ServeRepositories()
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	rp := s.st.repo(fullName)
	rp.issues[number] = &issue{number: number, title: title, body: body, login: login, state: "open", created: time.Now().UTC().Truncate(time.Second)}
}

func (s *Server) serveIssues() {
	s.mux.HandleFunc("GET /repos/{owner}/{repo}/issues/{number}", s.getIssue)
	s.mux.HandleFunc("GET /repos/{owner}/{repo}/issues/{number}/comments", s.listComments)
	s.mux.HandleFunc("PATCH /repos/{owner}/{repo}/issues/comments/{id}", s.editComment)
}

// getIssue answers an issue, or a pull request seen as an issue (with the
// pull_request key GitHub adds).
func (s *Server) getIssue(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.Authorize(w, r); !ok {
		return
	}
	n, _ := strconv.Atoi(r.PathValue("number"))
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	rp := s.st.lookup(r)
	if rp == nil {
		WriteError(w, http.StatusNotFound, "Not Found")
		return
	}
	base := s.URL + "/repos/" + rp.fullName
	num := strconv.Itoa(n)
	out := s.canned("issue")
	rebase(out, s.repoReplacer(rp.fullName, "/issues/1347", "/issues/"+num, "/pull/1347", "/pull/"+num, "/pulls/1347", "/pulls/"+num))
	// Nothing the fake does not hold: no labels, assignees, milestone, lock.
	overlay(out, map[string]any{
		"labels": []any{}, "assignee": nil, "assignees": []any{}, "milestone": nil, "closed_by": nil, "closed_at": nil,
		"state_reason": nil, "locked": false, "active_lock_reason": nil, "author_association": "NONE",
	})
	delete(out, "pull_request") // only a pull request seen as an issue has it
	if is := rp.issues[n]; is != nil {
		overlay(out, map[string]any{
			"title": is.title, "body": is.body, "state": is.state, "user": s.userJSON(is.login),
			"created_at": is.created.Format(time.RFC3339), "updated_at": is.created.Format(time.RFC3339),
			"html_url": "https://github.com/" + rp.fullName + "/issues/" + num,
		})
	} else if p := rp.pulls[n]; p != nil {
		overlay(out, map[string]any{
			"title": p.Title, "body": p.Body, "state": p.State, "user": s.userJSON(p.User), "draft": p.Draft,
			"created_at": p.created.Format(time.RFC3339), "updated_at": p.created.Format(time.RFC3339),
			"html_url": "https://github.com/" + rp.fullName + "/pull/" + num,
			"pull_request": map[string]any{"url": base + "/pulls/" + num, "html_url": "https://github.com/" + rp.fullName + "/pull/" + num,
				"diff_url": "https://github.com/" + rp.fullName + "/pull/" + num + ".diff", "patch_url": "https://github.com/" + rp.fullName + "/pull/" + num + ".patch",
				"merged_at": nil},
		})
		if p.Merged {
			out["pull_request"].(map[string]any)["merged_at"] = p.mergedAt.Format(time.RFC3339)
		}
		if !p.closed.IsZero() {
			out["closed_at"] = p.closed.Format(time.RFC3339)
		}
	} else {
		WriteError(w, http.StatusNotFound, "Not Found")
		return
	}
	id := rp.id*100000 + int64(n)
	out["id"] = id
	out["node_id"] = "I_" + strconv.FormatInt(id, 10)
	out["number"] = n
	out["url"] = base + "/issues/" + num
	out["repository_url"] = base
	out["comments"] = len(s.commentsOn(rp.fullName, n))
	WriteJSON(w, http.StatusOK, out)
}

// commentsOn returns the issue comments on fullName#number, oldest first.
func (s *Server) commentsOn(fullName string, number int) []Comment {
	var out []Comment
	for _, c := range s.Comments() {
		if strings.EqualFold(c.Repo, fullName) && c.Number == number {
			out = append(out, c)
		}
	}
	return out
}

func (s *Server) listComments(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.Authorize(w, r); !ok {
		return
	}
	n, _ := strconv.Atoi(r.PathValue("number"))
	out := []map[string]any{}
	for _, c := range s.commentsOn(r.PathValue("owner")+"/"+r.PathValue("repo"), n) {
		out = append(out, s.commentJSON(c))
	}
	WriteJSON(w, http.StatusOK, paginate(w, r, out))
}

func (s *Server) editComment(w http.ResponseWriter, r *http.Request) {
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
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	repo := r.PathValue("owner") + "/" + r.PathValue("repo")
	c := s.conv
	c.mu.Lock()
	var found *Comment
	for i := range c.comments {
		if c.comments[i].ID == id && strings.EqualFold(c.comments[i].Repo, repo) {
			c.comments[i].Body = body.Body
			c.comments[i].UpdatedAt = time.Now().UTC().Truncate(time.Second)
			c.comments[i].Edits++
			found = &c.comments[i]
			break
		}
	}
	var cm Comment
	if found != nil {
		cm = *found
	}
	c.mu.Unlock()
	if found == nil {
		WriteError(w, http.StatusNotFound, "Not Found")
		return
	}
	WriteJSON(w, http.StatusOK, s.commentJSON(cm))
}
