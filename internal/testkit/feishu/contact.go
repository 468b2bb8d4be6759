package feishu

import (
	"net/http"
	"strings"
)

const contactUsers = "/open-apis/contact/v3/users/"

// User is a person the fake's contact API knows.
type User struct {
	OpenID string
	Name   string
	EnName string
}

// AddUser makes GET /open-apis/contact/v3/users/{open_id} answer u.
func (s *Server) AddUser(u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users == nil {
		s.users = map[string]User{}
	}
	s.users[u.OpenID] = u
}

// user answers GET /open-apis/contact/v3/users/{user_id} as Feishu does
// for user_id_type=open_id (the default): a person outside the app's
// contact range, or unknown, gets code 41050.
func (s *Server) user(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, contactUsers)
	if t := r.URL.Query().Get("user_id_type"); t != "" && t != "open_id" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 99992402, "msg": "field validation failed: user_id_type (the fake knows open_id only)"})
		return
	}
	s.mu.Lock()
	u, ok := s.users[id]
	s.mu.Unlock()
	if !ok || id == "" || strings.Contains(id, "/") {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 41050, "msg": "no user authority error"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "success", "data": map[string]any{"user": map[string]any{
		"open_id": u.OpenID, "union_id": "on_" + strings.TrimPrefix(u.OpenID, "ou_"), "name": u.Name, "en_name": u.EnName,
		"status": map[string]any{"is_activated": true, "is_frozen": false, "is_resigned": false},
	}}})
}
