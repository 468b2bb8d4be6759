package promptparts

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
)

// apiServer serves s.Routes under /api as main mounts it, with the actor
// the authenticator would set.
func apiServer(t *testing.T, s *Service) *httptest.Server {
	t.Helper()
	r := chi.NewRouter()
	r.Route("/api", func(api chi.Router) {
		api.Use(func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				next.ServeHTTP(w, r.WithContext(httpserver.WithActor(r.Context(), "carol")))
			})
		})
		s.Routes(api)
	})
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return srv
}

func call(t *testing.T, srv *httptest.Server, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out), string(raw))
	return resp.StatusCode, out
}

func jsonPart(t *testing.T, body map[string]any, key string) map[string]any {
	t.Helper()
	for _, p := range body["parts"].([]any) {
		if p.(map[string]any)["key"] == key {
			return p.(map[string]any)
		}
	}
	t.Fatalf("no part %s", key)
	return nil
}

func TestConfigAPI(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		s := newService(t, d, testDefaults())
		srv := apiServer(t, s)

		status, body := call(t, srv, "GET", "/api/config", "")
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, float64(0), body["revision"])
		require.Len(t, body["parts"], len(RequiredKeys))
		require.Equal(t, map[string]any{"version": float64(0), "mode": "explicit", "explicit_request_exemption": true, "rules": []any{}}, body["policy"])
		require.Equal(t, float64(DefaultSizeLimit), body["size_limit"])
		require.Positive(t, body["size"])
		require.Equal(t, map[string]any{}, body["skills"])
		require.Equal(t, map[string]any{
			"communication": map[string]any{"text": "", "agent_line": DefaultAgentLine, "review_bots": []any{}},
			"ticket_scope":  map[string]any{"text": ""},
			"delivery_requirements": map[string]any{
				"text":          "",
				"auto_merge":    map[string]any{"enabled": false, "max_changed_lines": float64(0), "checks": []any{}, "approvals": float64(0)},
				"commit_author": map[string]any{"name": "", "email": ""},
			},
		}, body["sections"])
		env := jsonPart(t, body, KeyEnvironment)
		require.Equal(t, "default", env["status"])
		require.Equal(t, []any{"{variables}"}, env["placeholders"])
		require.Nil(t, env["override"])
		require.Nil(t, env["base_sha256"])

		status, body = call(t, srv, "POST", "/api/config", `{"base_revision": 0, "note": "n", "overrides": {"runtime/work": {"text": "ours"}}}`)
		require.Equal(t, http.StatusCreated, status)
		require.Equal(t, map[string]any{"revision": float64(1)}, body)

		status, body = call(t, srv, "POST", "/api/config", `{"base_revision": 1, "overrides": {"runtime/work": {"text": "ours"}}}`)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, map[string]any{"revision": float64(1), "unchanged": true}, body)

		status, body = call(t, srv, "POST", "/api/config", `{"base_revision": 0, "overrides": {"runtime/work": {"text": "stale"}}}`)
		require.Equal(t, http.StatusConflict, status)
		require.Equal(t, float64(1), body["head_revision"])
		require.Equal(t, float64(0), body["base_revision"])
		require.NotEmpty(t, body["error"])

		status, body = call(t, srv, "POST", "/api/config", `{"base_revision": 1, "overrides": {"runtime/nope": {"text": "x"}}, "skills": {"feishu": "x"}}`)
		require.Equal(t, http.StatusUnprocessableEntity, status)
		require.Equal(t, []any{
			map[string]any{"key": "overrides.runtime/nope", "message": "unknown part: the built-in parts are " + strings.Join(s.reg.Keys(), ", ")},
			map[string]any{"key": "skills.feishu", "message": `"feishu" is the name of a built-in skill: choose another name`},
		}, body["problems"])

		status, body = call(t, srv, "POST", "/api/config", `{"base_revision": 1,`)
		require.Equal(t, http.StatusBadRequest, status)
		require.Contains(t, body["error"], "malformed JSON")

		status, body = call(t, srv, "GET", "/api/config", "")
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, float64(1), body["revision"])
		work := jsonPart(t, body, KeyWork)
		require.Equal(t, "overridden", work["status"])
		require.Equal(t, "ours", work["override"])
		require.Equal(t, s.reg.SHA256(KeyWork), work["base_sha256"])

		status, body = call(t, srv, "POST", "/api/config", `{"base_revision": 1, "skills": {"identities": "alice is @alice"}}`)
		require.Equal(t, http.StatusCreated, status)
		require.Equal(t, map[string]any{"revision": float64(2)}, body)

		status, body = call(t, srv, "GET", "/api/config/versions", "")
		require.Equal(t, http.StatusOK, status)
		versions := body["versions"].([]any)
		require.Len(t, versions, 2)
		require.Equal(t, "carol", versions[0].(map[string]any)["actor"])
		require.Equal(t, "panel", versions[0].(map[string]any)["origin"])
		require.Equal(t, "n", versions[1].(map[string]any)["note"])

		status, body = call(t, srv, "GET", "/api/config/versions/1", "")
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, float64(1), body["revision"])
		require.Equal(t, "ours", body["config"].(map[string]any)["overrides"].(map[string]any)[KeyWork].(map[string]any)["text"])

		status, _ = call(t, srv, "GET", "/api/config/versions/7", "")
		require.Equal(t, http.StatusNotFound, status)

		status, body = call(t, srv, "GET", "/api/config/diff?from=0&to=2", "")
		require.Equal(t, http.StatusOK, status)
		changes := body["changes"].([]any)
		require.Len(t, changes, 2)
		require.Equal(t, KeyWork, changes[0].(map[string]any)["key"])
		require.Equal(t, "-# runtime/work\n-\n-Built-in text of runtime/work.\n+ours\n", changes[0].(map[string]any)["diff"])
		require.Equal(t, "skills/identities", changes[1].(map[string]any)["key"])
		require.Equal(t, "+alice is @alice\n", changes[1].(map[string]any)["diff"])

		status, body = call(t, srv, "POST", "/api/config/versions/1/restore", `{"base_revision": 1}`)
		require.Equal(t, http.StatusConflict, status)
		require.Equal(t, float64(2), body["head_revision"])
		status, body = call(t, srv, "POST", "/api/config/versions/1/restore", `{}`)
		require.Equal(t, http.StatusUnprocessableEntity, status)
		require.Equal(t, "base_revision", body["problems"].([]any)[0].(map[string]any)["key"])
		status, body = call(t, srv, "POST", "/api/config/versions/1/restore", `{"base_revision": 2}`)
		require.Equal(t, http.StatusCreated, status)
		require.Equal(t, map[string]any{"revision": float64(3)}, body)
		status, body = call(t, srv, "GET", "/api/config/diff?from=1&to=3", "")
		require.Equal(t, http.StatusOK, status)
		require.Empty(t, body["changes"])
		status, body = call(t, srv, "POST", "/api/config/versions/0/restore", `{"base_revision": 3, "follow_defaults": true}`)
		require.Equal(t, http.StatusCreated, status)
		require.Equal(t, map[string]any{"revision": float64(4)}, body)

		status, body = call(t, srv, "GET", "/api/config/versions/3/content", "")
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, "recorded", body["builtins"])
		require.Equal(t, float64(3), body["revision"])
		var item map[string]any
		for _, it := range body["items"].([]any) {
			if it.(map[string]any)["key"] == KeyWork {
				item = it.(map[string]any)
			}
		}
		require.Equal(t, map[string]any{"key": KeyWork, "text": "ours", "overridden": true}, item)
		status, _ = call(t, srv, "GET", "/api/config/versions/9/content", "")
		require.Equal(t, http.StatusNotFound, status)
	})
}

func TestConfigAPIShowsDefaultUpdated(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		old := withText(testDefaults(), KeyAdmission, "# Admission\n\nJudge the card.\n")
		s1 := newService(t, d, old)
		save(t, s1, `{"base_revision": 0, "overrides": {"runtime/admission": {"text": "Ours."}}}`)
		s2 := newService(t, d, withText(old, KeyAdmission, "# Admission\n\nJudge the card first.\n"))
		srv := apiServer(t, s2)

		_, body := call(t, srv, "GET", "/api/config", "")
		p := jsonPart(t, body, KeyAdmission)
		require.Equal(t, "default_updated", p["status"])
		require.Equal(t, "# Admission\n\nJudge the card.\n", p["base_text"])
		require.Equal(t, "# Admission\n\nJudge the card first.\n", p["default"])
		require.Equal(t, " # Admission\n \n-Judge the card.\n+Judge the card first.\n", p["default_diff"])

		status, _ := call(t, srv, "POST", "/api/config", fmt.Sprintf(`{"base_revision": 1, "overrides": {"runtime/admission": {"text": "Ours.", "base": %q}}}`, p["default_sha256"]))
		require.Equal(t, http.StatusCreated, status)
		_, body = call(t, srv, "GET", "/api/config", "")
		p = jsonPart(t, body, KeyAdmission)
		require.Equal(t, "overridden", p["status"])
		require.Nil(t, p["base_text"])
	})
}
