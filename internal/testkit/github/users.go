package github

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// users numbers the logins the fake has seen; its own lock lets any
// handler render a user while holding other locks.
type users struct {
	mu  sync.Mutex
	ids map[string]int64
}

// botLogin is the login of the App's bot account, which writes everything
// done with an installation token.
func (s *Server) botLogin() string { return s.Slug + "[bot]" }

// UserID returns login's user id: BotUserID for the App's bot, else an id
// given in order of first appearance from 1001 on.
func (s *Server) UserID(login string) int64 {
	if strings.EqualFold(login, s.botLogin()) {
		return BotUserID
	}
	u := &s.users
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.ids == nil {
		u.ids = map[string]int64{}
	}
	k := strings.ToLower(login)
	id, ok := u.ids[k]
	if !ok {
		id = int64(1001 + len(u.ids))
		u.ids[k] = id
	}
	return id
}

// userJSON is login as GitHub nests a user in other objects (simple-user),
// from the published example.
func (s *Server) userJSON(login string) map[string]any {
	return s.userFrom(s.canned("issue-comment", "user"), login)
}

func (s *Server) userFrom(u map[string]any, login string) map[string]any {
	typ, html := "User", "https://github.com/"+login
	if slug, ok := strings.CutSuffix(login, "[bot]"); ok {
		typ, html = "Bot", "https://github.com/apps/"+slug
	}
	id := s.UserID(login)
	rebase(u, strings.NewReplacer(
		"https://api.github.com/users/octocat", s.URL+"/users/"+login,
		"https://api.github.com/orgs/github", s.URL+"/users/"+login,
		"https://github.com/octocat", html,
	))
	return overlay(u, map[string]any{
		"login": login, "id": id, "node_id": "U_" + strconv.FormatInt(id, 10), "type": typ,
		"html_url": html, "site_admin": false,
	})
}

// orgJSON is an organization owning repositories, as a simple-user.
func (s *Server) orgJSON(login string, id int64) map[string]any {
	u := s.userJSON(login)
	return overlay(u, map[string]any{"id": id, "node_id": "O_" + strconv.FormatInt(id, 10), "type": "Organization",
		"url": s.URL + "/orgs/" + login, "repos_url": s.URL + "/orgs/" + login + "/repos", "events_url": s.URL + "/orgs/" + login + "/events"})
}

// getUser answers GET /users/{username} with a public-user: the published
// example with the person's details (name, company, email…) unknown.
func (s *Server) getUser(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.Authorize(w, r); !ok {
		return
	}
	login := r.PathValue("login")
	u := s.userFrom(s.canned("public-user-default-response"), login)
	overlay(u, map[string]any{"name": nil, "company": nil, "blog": "", "location": nil, "email": nil, "hireable": nil,
		"bio": nil, "twitter_username": nil, "public_repos": 0, "public_gists": 0, "followers": 0, "following": 0})
	WriteJSON(w, http.StatusOK, u)
}
