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

func (s *Server) userJSON(login string) map[string]any {
	typ := "User"
	if strings.HasSuffix(login, "[bot]") {
		typ = "Bot"
	}
	id := s.UserID(login)
	return map[string]any{
		"login": login, "id": id, "node_id": "U_" + strconv.FormatInt(id, 10), "type": typ,
		"html_url": "https://github.com/" + login,
	}
}

func (s *Server) getUser(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.Authorize(w, r); !ok {
		return
	}
	WriteJSON(w, http.StatusOK, s.userJSON(r.PathValue("login")))
}
