package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

// browserClient is a browser's cookies and redirects over plain HTTP.
func browserClient(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// reader reads a response's status and body.
func reader(t *testing.T) func(*http.Response, error) (int, string) {
	return func(res *http.Response, err error) (int, string) {
		t.Helper()
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, string(b)
	}
}

var linkInMessage = regexp.MustCompile(`https?://[^\s"\\]+/oauth/github/link\?t=[A-Za-z0-9._-]+`)

// TestFeishuMemberOpensWorkOnlyAfterLinkingGitHub drives the binary on
// both databases with the fake Feishu, GitHub and model: a Feishu member
// with no linked GitHub login asks for work in a repository and gets no
// Ticket and a one-sentence refusal (the model reads it too), and the
// link to prove their GitHub login in a private message that nobody else
// receives. Another member who gets the link is stopped at Feishu's
// sign-in; the member follows it through Feishu's sign-in and the fake
// GitHub's OAuth flow, and the same request then opens a Ticket there,
// through their login's write permission. The link is recorded in the
// activity log under their name.
func TestFeishuMemberOpensWorkOnlyAfterLinkingGitHub(t *testing.T) {
	t.Parallel()
	databases(t, func(t *testing.T, dbURL string) {
		readBody := reader(t)
		gh := fakegithub.New(t)
		gh.ServeConversations()
		gh.SetPermission(helloRepo, "rita-gh", "write")
		fs := fakefeishu.New(t)
		fs.AddUser(fakefeishu.User{OpenID: cardRequester, Name: "Rita"})

		model := fakeopenai.New(t)
		model.Fallback(fakeopenai.Respond(func(req fakeopenai.Request) fakeopenai.Reply {
			last := req.LastMessage()
			if req.Model != "router-model" || last.Role != "user" {
				return fakeopenai.Text("Nothing to do.")
			}
			refused := false
			for _, m := range req.Messages {
				refused = refused || m.Role == "tool" && strings.Contains(m.Content, "refused:")
			}
			var decisions []map[string]any
			for _, c := range candidates(last.Content) {
				action := map[string]any{"candidate": c.id, "action": "new", "title": "Fix the README typo", "repo": helloRepo}
				if refused && !strings.Contains(c.text, "again") {
					action = map[string]any{"candidate": c.id, "action": "ignore"}
				}
				decisions = append(decisions, action)
			}
			if len(decisions) == 0 {
				return fakeopenai.Text("Noted.")
			}
			args, _ := json.Marshal(map[string]any{"decisions": decisions})
			return fakeopenai.Calls(fakeopenai.Call("", "orchestrator_route", string(args)))
		}))

		const secret, token = "people-webhook-secret", "people-admin-token-0123456789"
		addr := freeAddr(t)
		base := "http://" + addr
		p := start(t, "serve", map[string]string{
			"SUPERAGENT_ADDR":                      addr,
			"SUPERAGENT_DATA_DIR":                  t.TempDir(),
			"SUPERAGENT_DATABASE_URL":              dbURL,
			"SUPERAGENT_ADMIN_TOKEN":               token,
			"SUPERAGENT_PUBLIC_URL":                base,
			"SUPERAGENT_GITHUB_APP_ID":             fmt.Sprint(gh.AppID),
			"SUPERAGENT_GITHUB_PRIVATE_KEY":        string(gh.PrivateKey()),
			"SUPERAGENT_GITHUB_API_URL":            gh.URL,
			"SUPERAGENT_GITHUB_WEB_URL":            gh.URL,
			"SUPERAGENT_GITHUB_CLIENT_ID":          gh.ClientID(),
			"SUPERAGENT_GITHUB_CLIENT_SECRET":      fakegithub.ClientSecret,
			"SUPERAGENT_GITHUB_WEBHOOK_SECRET":     secret,
			"SUPERAGENT_FEISHU_APP_ID":             fakefeishu.AppID,
			"SUPERAGENT_FEISHU_APP_SECRET":         "people-app-secret",
			"SUPERAGENT_FEISHU_VERIFICATION_TOKEN": cardToken,
			"SUPERAGENT_FEISHU_ENCRYPT_KEY":        cardKey,
			"SUPERAGENT_FEISHU_BASE_URL":           fs.URL,
			"SUPERAGENT_FEISHU_ALLOWED_CHATS":      cardChat,
			"SUPERAGENT_MODEL_BASE_URL":            model.URL(),
			"SUPERAGENT_MODEL_API_KEY":             "sk-test-people-key-0001",
			"SUPERAGENT_MODEL":                     "executor-model",
			"SUPERAGENT_ROUTER_MODEL":              "router-model",
			"SUPERAGENT_ROUTING_DEBOUNCE":          "100ms",
		}, "serve")
		p.waitHTTP("/readyz", 30*time.Second)
		installApp(t, p, secret, "people-install", dbURL)
		t.Cleanup(func() {
			if t.Failed() {
				for _, m := range fs.Messages() {
					t.Logf("feishu message %s (parent %s): %s", m.ID, m.ParentID, m.Content)
				}
			}
		})
		tickets := func() []map[string]any {
			var list struct {
				Tickets []map[string]any `json:"tickets"`
			}
			getJSON(t, base+"/api/tickets", token, &list)
			return list.Tickets
		}

		// Not linked: refused, told in one sentence, and sent the link
		// privately.
		ask(t, p, fs, "om_people_first", "@_user_1 fix the typo in the README of "+helloRepo, 1)
		var refusal, offer string
		waitFor(t, 2*time.Minute, "the refusal under the request and the private link", func() bool {
			for _, m := range fs.Messages() {
				if m.ParentID == "om_people_first" && strings.Contains(m.Content, "no linked GitHub login") {
					refusal = m.Content
				}
				if m.ToOpenID == cardRequester {
					offer = m.Content
				}
			}
			return refusal != "" && offer != ""
		})
		var text struct {
			Text string `json:"text"`
		}
		require.NoError(t, json.Unmarshal([]byte(refusal), &text))
		require.Equal(t, 1, strings.Count(strings.TrimSpace(text.Text), ". ")+1, "one sentence: %s", text.Text)
		require.Contains(t, text.Text, "Rita has no linked GitHub login and this chat does not open "+helloRepo)
		require.Contains(t, text.Text, "I have sent them a private message with a link")
		for _, m := range fs.Messages() {
			if m.ToOpenID == "" {
				require.NotRegexp(t, linkInMessage, m.Content, "the group never sees the link")
			}
		}
		require.NoError(t, json.Unmarshal([]byte(offer), &text))
		require.Empty(t, tickets())
		waitFor(t, time.Minute, "the model to read the refusal", func() bool {
			for _, r := range model.Requests() {
				for _, m := range r.Messages {
					if m.Role == "tool" && strings.Contains(m.Content, "refused: Rita has no linked GitHub login") {
						return true
					}
				}
			}
			return false
		})
		var note string
		require.NoError(t, openDB(t, dbURL).QueryRow(context.Background(), `SELECT route_refusal FROM cards WHERE author_id = $1`, cardRequester).Scan(&note))
		require.Contains(t, note, "no linked GitHub login", "the refusal is recorded on the card")

		// Someone else who gets the link is stopped at Feishu's sign-in
		// and lends Rita nothing.
		link := linkInMessage.FindString(text.Text)
		require.NotEmpty(t, link, text.Text)
		tok, err := url.Parse(link)
		require.NoError(t, err)
		fs.AddUser(fakefeishu.User{OpenID: "ou_people_other", Name: "Otto"})
		fs.SignInBrowser("ou_people_other")
		gh.SetPermission(helloRepo, "otto-gh", "admin")
		gh.SignInBrowser("otto-gh")
		status, page := readBody(browserClient(t).PostForm(base+"/oauth/github/link", url.Values{"t": {tok.Query().Get("t")}}))
		require.Equal(t, http.StatusForbidden, status, page)
		require.Contains(t, page, "this link is for someone else")
		require.Zero(t, gh.UserTokens(), "Otto never reached GitHub")

		// Rita follows the link: a page naming her, Feishu's sign-in (the
		// fake approves for her), GitHub's authorization (for rita-gh),
		// then back.
		browser := browserClient(t)
		status, page = readBody(browser.Get(link))
		require.Equal(t, http.StatusOK, status, page)
		require.Contains(t, page, "Rita")
		fs.SignInBrowser(cardRequester)
		gh.SignInBrowser("rita-gh")
		status, page = readBody(browser.PostForm(base+"/oauth/github/link", url.Values{"t": {tok.Query().Get("t")}}))
		require.Equal(t, http.StatusOK, status, page)
		require.Contains(t, page, "@rita-gh</strong> is now linked to <strong>Rita")
		// A second browser cannot finish a flow it did not start.
		status, _ = readBody(browserClient(t).Get(base + "/oauth/github/callback?code=x&state=" + url.QueryEscape(tok.Query().Get("t"))))
		require.Equal(t, http.StatusBadRequest, status)
		require.Empty(t, fs.Violations())

		var everyone []map[string]any
		getJSON(t, base+"/api/people", token, &everyone)
		require.Len(t, everyone, 1)
		require.Equal(t, "Rita", everyone[0]["name"])
		require.Equal(t, []any{"rita-gh"}, everyone[0]["github"])
		var actor string
		require.NoError(t, openDB(t, dbURL).QueryRow(context.Background(), `SELECT actor FROM admin_audit WHERE action = 'person_link_github'`).Scan(&actor))
		require.Equal(t, "Rita (@rita-gh)", actor)

		// Linked: the same kind of request opens a Ticket in the repository.
		ask(t, p, fs, "om_people_again", "@_user_1 again: fix the typo in the README of "+helloRepo, 2)
		var list []map[string]any
		waitFor(t, 2*time.Minute, "the request to become a Ticket", func() bool {
			list = tickets()
			return len(list) == 1
		})
		require.Equal(t, helloRepo, list[0]["repo"])
		code, _ := p.stop(10 * time.Second)
		require.Equal(t, 0, code)
	})
}

var csrfInPage = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// TestPanelSignInWithGitHubAndPeopleFile drives the binary on both
// databases: people come from a file (`superagent people import`, which
// lists every problem of a bad file and changes nothing, and exports
// back what it read); a member signs in through the fake GitHub's OAuth
// flow, sees the panel, and cannot save a prompt; an admin signs in the
// same way, saves one, and the activity log and the version name them;
// a GitHub user who is nobody on the team is refused.
func TestPanelSignInWithGitHubAndPeopleFile(t *testing.T) {
	t.Parallel()
	databases(t, func(t *testing.T, dbURL string) {
		readBody := reader(t)
		gh := fakegithub.New(t)
		dataDir := t.TempDir()
		runCmd := commandRunner(map[string]string{"SUPERAGENT_DATABASE_URL": dbURL, "SUPERAGENT_DATA_DIR": dataDir})

		code, out, _ := runCmd("people", "--help")
		require.Equal(t, 0, code)
		require.Contains(t, out, "superagent people import FILE")

		dir := t.TempDir()
		bad := filepath.Join(dir, "bad.json")
		require.NoError(t, os.WriteFile(bad, []byte(`{"people":[
			{"name":"Ada Lovelace","role":"owner","github":["ada-gh"]},
			{"name":"","github":["ada-gh","not a login"],"feishu_open_ids":["oc_not_a_person"]}]}`), 0o600))
		code, _, stderr := runCmd("people", "import", bad)
		require.Equal(t, 1, code)
		for _, problem := range []string{
			`person 1 (Ada Lovelace): role must be admin or member, not "owner"`,
			"person 2: name is required",
			`person 2: github login "not a login" is not a GitHub login`,
			`person 2: feishu open_id "oc_not_a_person" is not a Feishu open_id`,
			`person 2: github login "ada-gh" is also given to person 1`,
		} {
			require.Contains(t, stderr, problem)
		}
		code, out, stderr = runCmd("people", "export")
		require.Equal(t, 0, code, stderr)
		require.JSONEq(t, `{"people":[]}`, out, "the bad file changed nothing")

		good := filepath.Join(dir, "people.json")
		require.NoError(t, os.WriteFile(good, []byte(`{"people":[
			{"name":"Ada Lovelace","role":"admin","github":["Ada-GH"],"feishu_open_ids":["ou_ada"]},
			{"name":"Bob","github":["bob-gh"]}]}`), 0o600))
		code, out, stderr = runCmd("people", "import", good)
		require.Equal(t, 0, code, stderr)
		require.Contains(t, out, "imported 2 people")
		exported := filepath.Join(dir, "exported.json")
		code, _, stderr = runCmd("people", "export", "-o", exported)
		require.Equal(t, 0, code, stderr)
		back, err := os.ReadFile(exported)
		require.NoError(t, err)
		require.JSONEq(t, `{"people":[
			{"name":"Ada Lovelace","role":"admin","github":["ada-gh"],"feishu_open_ids":["ou_ada"]},
			{"name":"Bob","role":"member","github":["bob-gh"]}]}`, string(back))
		code, out, stderr = runCmd("people", "import", exported)
		require.Equal(t, 0, code, stderr)
		require.Contains(t, out, "imported 2 people")
		code, again, _ := runCmd("people", "export")
		require.Equal(t, 0, code)
		require.JSONEq(t, string(back), again, "an export imported again is the same people")

		const token = "signin-admin-token-0123456789"
		addr := freeAddr(t)
		base := "http://" + addr
		p := start(t, "serve", map[string]string{
			"SUPERAGENT_ADDR":                 addr,
			"SUPERAGENT_DATA_DIR":             dataDir,
			"SUPERAGENT_DATABASE_URL":         dbURL,
			"SUPERAGENT_ADMIN_TOKEN":          token,
			"SUPERAGENT_PUBLIC_URL":           base,
			"SUPERAGENT_GITHUB_API_URL":       gh.URL,
			"SUPERAGENT_GITHUB_WEB_URL":       gh.URL,
			"SUPERAGENT_GITHUB_CLIENT_ID":     gh.ClientID(),
			"SUPERAGENT_GITHUB_CLIENT_SECRET": fakegithub.ClientSecret,
		}, "serve")
		p.waitHTTP("/readyz", 30*time.Second)

		signIn := func(login string) (*http.Client, int, string) {
			c := browserClient(t)
			gh.SignInBrowser(login)
			status, page := readBody(c.Get(base + "/admin/signin/github?next=/admin/prompts"))
			return c, status, page
		}
		savePrompt := func(c *http.Client, words string) int {
			_, page := readBody(c.Get(base + "/admin/"))
			m := csrfInPage.FindStringSubmatch(page)
			require.NotNil(t, m, "a signed-in page carries the CSRF token")
			status, _ := readBody(c.PostForm(base+"/admin/prompts/runtime/work",
				url.Values{"csrf": {m[1]}, "base_revision": {"0"}, "text": {words}, "action": {"save"}}))
			return status
		}
		versions := func() int {
			var n int
			require.NoError(t, openDB(t, dbURL).QueryRow(context.Background(), `SELECT count(*) FROM prompt_versions WHERE revision > 0`).Scan(&n))
			return n
		}

		bob, status, page := signIn("bob-gh")
		require.Equal(t, http.StatusOK, status, page)
		require.Contains(t, page, "Signed in as <strong>Bob (@bob-gh)</strong>")
		require.Equal(t, http.StatusForbidden, savePrompt(bob, "Members write no prompts."))
		require.Zero(t, versions(), "the member's save changed nothing")
		status, _ = readBody(bob.Get(base + "/admin/people"))
		require.Equal(t, http.StatusOK, status, "members see the people")

		ada, status, page := signIn("ada-gh")
		require.Equal(t, http.StatusOK, status, page)
		require.Equal(t, http.StatusOK, savePrompt(ada, "Admins write prompts."), "the save redirects to the saved part")
		require.Equal(t, 1, versions())
		var versionActor string
		require.NoError(t, openDB(t, dbURL).QueryRow(context.Background(), `SELECT actor FROM prompt_versions WHERE revision = 1`).Scan(&versionActor))
		require.Equal(t, "Ada Lovelace (@ada-gh)", versionActor)

		_, status, page = signIn("eve-gh")
		require.Equal(t, http.StatusForbidden, status)
		require.Contains(t, page, "not linked to anyone on this team")

		rows, err := openDB(t, dbURL).Query(context.Background(), `SELECT actor, action, detail FROM admin_audit ORDER BY id`)
		require.NoError(t, err)
		var log []string
		for rows.Next() {
			var a, b, c string
			require.NoError(t, rows.Scan(&a, &b, &c))
			log = append(log, a+" | "+b+" | "+c)
		}
		rows.Close()
		require.Contains(t, log, "Bob (@bob-gh) | sign_in | github, member")
		require.Contains(t, log, "Ada Lovelace (@ada-gh) | sign_in | github, admin")
		require.Len(t, log, 4, "two imports and two sign-ins: %v", log)
		for _, l := range log[:2] {
			require.True(t, strings.HasPrefix(l, "cli"), l)
		}
		code, _ = p.stop(10 * time.Second)
		require.Equal(t, 0, code)
	})
}
