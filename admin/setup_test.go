package admin

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/executor/repoenv"
	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/internal/secret"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

const secretValue = "s3cr3t-VALUE-for-tests-7781"

func setupPanel(t *testing.T, d *db.DB) (*panel, *repoenv.Store, *tickets.Store) {
	t.Helper()
	box, err := secret.NewBox([]byte("0123456789abcdef0123456789abcdef"))
	require.NoError(t, err)
	env := repoenv.New(d, box, nil)
	store := tickets.New(tickets.Config{})
	return newPanel(t, d, promptparts.BuiltinDefaults(), Deps{Tickets: store, Sessions: session.NewStore(d, nil, nil), RepoEnv: env}), env, store
}

// Secrets set through the API are write-only: the API lists names, never
// values; bad names and short values are refused and change nothing; every
// change is in the audit log without its value.
func TestSetupAPIKeepsSecretsWriteOnly(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		p, env, _ := setupPanel(t, d)
		r := chi.NewRouter()
		r.Use(func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				next.ServeHTTP(w, r.WithContext(httpserver.WithActor(r.Context(), "admin")))
			})
		})
		p.admin.SetupRoutes(r)
		call := func(method, path, body string) (int, string) {
			req := httptest.NewRequest(method, path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			r.ServeHTTP(rec, req)
			return rec.Code, rec.Body.String()
		}
		code, body := call("PUT", "/repos/acme/web/secrets/API_TOKEN", `{"value":"`+secretValue+`"}`)
		require.Equal(t, http.StatusNoContent, code, body)
		code, body = call("GET", "/repos/acme/web/secrets", "")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, `"name":"API_TOKEN"`)
		require.NotContains(t, body, secretValue)

		for _, bad := range []struct{ path, body string }{
			{"/repos/acme/web/secrets/1BAD", `{"value":"` + secretValue + `"}`},
			{"/repos/acme/web/secrets/PATH", `{"value":"` + secretValue + `"}`},
			{"/repos/acme/web/secrets/GOMODCACHE", `{"value":"` + secretValue + `"}`},
			{"/repos/acme/web/secrets/SHORT", `{"value":"short"}`},
		} {
			code, body = call("PUT", bad.path, bad.body)
			require.Equal(t, http.StatusUnprocessableEntity, code, "%s: %s", bad.path, body)
		}
		list, err := env.Secrets(context.Background(), d, "")
		require.NoError(t, err)
		require.Len(t, list, 1, "refused saves changed nothing")

		code, body = call("PUT", "/setup/default", `{"script":"echo hi\n"}`)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"script":"echo hi\n"`)
		code, _ = call("DELETE", "/repos/acme/web/secrets/API_TOKEN", "")
		require.Equal(t, http.StatusNoContent, code)
		code, _ = call("DELETE", "/repos/acme/web/secrets/API_TOKEN", "")
		require.Equal(t, http.StatusNotFound, code)

		entries, err := auditStore{}.list(context.Background(), d, 10)
		require.NoError(t, err)
		var actions []string
		for _, e := range entries {
			actions = append(actions, e.Action+" "+e.Target+" "+e.Detail)
			require.NotContains(t, e.Detail, secretValue)
		}
		require.Contains(t, actions, "set_repo_secret acme/web API_TOKEN")
		require.Contains(t, actions, "delete_repo_secret acme/web API_TOKEN")
	})
}

// The panel sets a secret and shows its name only; the Ticket page shows a
// failed setup with the end of its output.
func TestSetupPageAndTicketPage(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		p, env, store := setupPanel(t, d)
		c := p.client(t)
		c.signIn("ada")
		res := c.post("/admin/setup", url.Values{"csrf": {c.csrf()}, "op": {"secret"}, "repo": {"acme/web"}, "name": {"API_TOKEN"}, "value": {secretValue}})
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		res = c.get("/admin/setup")
		require.Equal(t, http.StatusOK, res.status)
		require.Contains(t, res.body, "API_TOKEN")
		require.NotContains(t, res.body, secretValue)
		res = c.post("/admin/setup", url.Values{"csrf": {c.csrf()}, "op": {"secret"}, "repo": {"acme/web"}, "name": {"HOME"}, "value": {secretValue}})
		require.Equal(t, http.StatusUnprocessableEntity, res.status)
		require.Contains(t, res.body, "HOME is set by the sandbox")
		require.NotContains(t, res.body, secretValue, "a refused value is not shown back")

		tk, err := store.CreateTicket(ctx, d, tickets.Ticket{Title: "Fix the build", Repo: "acme/web"})
		require.NoError(t, err)
		require.NoError(t, env.Record(ctx, d, repoenv.Outcome{TicketID: tk.ID, Source: repoenv.SourceRepository, ScriptSHA256: strings.Repeat("ab", 32),
			ExitCode: 2, Tail: "npm ERR! network unreachable", Duration: 3 * time.Second}))
		res = c.get("/admin/tickets/" + itoa(tk.ID))
		require.Equal(t, http.StatusOK, res.status)
		require.Contains(t, res.body, `data-setup="failed"`)
		require.Contains(t, res.body, "the repository&#39;s .superagent/setup.sh failed: exit code 2 after 3s")
		require.Contains(t, res.body, "npm ERR! network unreachable")
	})
}

// In a browser: the default script and a secret are saved through the
// Setup page, which shows the secret's name and never its value; the
// Ticket page shows the failed setup.
func TestBrowserSetupPage(t *testing.T) {
	ctx := browser(t, 1280)
	d := dbtest.SQLite(t)
	p, env, store := setupPanel(t, d)
	signInBrowser(t, ctx, p.srv.URL, "Ada")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(p.srv.URL+"/admin/setup"),
		chromedp.WaitVisible(chromedp.CSS("#script")),
		chromedp.SendKeys(chromedp.CSS("#script"), "go mod download\n"),
	))
	click(t, ctx, `#default-h ~ form button[type="submit"]`, ".flash-ok")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#repo"), "acme/web"),
		chromedp.SendKeys(chromedp.CSS("#name"), "API_TOKEN"),
		chromedp.SendKeys(chromedp.CSS("#value"), secretValue),
	))
	click(t, ctx, `#value ~ button[type="submit"]`, ".flash-ok")
	require.Equal(t, "Saved.", text(t, ctx, ".flash-ok"))
	require.Contains(t, text(t, ctx, "#secrets-h ~ table"), "API_TOKEN")
	html, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	require.NoError(t, err)
	require.NotContains(t, html, secretValue)
	value, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#value").value`))
	require.NoError(t, err)
	require.Empty(t, value)
	script, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#script").value`))
	require.NoError(t, err)
	require.Equal(t, "go mod download\n", script, "the saved default is shown")
	screenshot(t, ctx, "setup", "")

	ctxb := context.Background()
	tk, err := store.CreateTicket(ctxb, d, tickets.Ticket{Title: "Fix the build", Repo: "acme/web"})
	require.NoError(t, err)
	require.NoError(t, env.Record(ctxb, d, repoenv.Outcome{TicketID: tk.ID, Source: repoenv.SourceDefault, ScriptSHA256: strings.Repeat("cd", 32),
		ExitCode: 1, Tail: "go: module lookup disabled", Duration: time.Second}))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(p.srv.URL+"/admin/tickets/"+itoa(tk.ID)),
		chromedp.WaitVisible(chromedp.CSS(`[data-setup="failed"]`)),
	))
	require.Contains(t, text(t, ctx, `[data-setup="failed"]`), "the team's default setup script failed: exit code 1")
	require.Contains(t, text(t, ctx, "#setup-h ~ details pre"), "go: module lookup disabled")
}
