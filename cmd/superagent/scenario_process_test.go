package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	larkevent "github.com/larksuite/oapi-sdk-go/v3/event"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/promptparts"
)

// A scenario is one recorded-shape day, replayed through the binary:
// testdata/scenarios/<name>/scenario.json. docs/scenarios.md describes the
// format and what each scenario covers.
type scenario struct {
	Description string `json:"description"`
	// Repo is the files of helloRepo's default branch; a scenario with
	// GitHub steps has one.
	Repo map[string]string `json:"repo"`
	// People are GitHub logins and their permission on helloRepo.
	People map[string]string `json:"people"`
	Feishu *scenarioFeishu   `json:"feishu"`
	// Router plays the main Session: a candidate whose text holds a
	// rule's match becomes a new Ticket; any other candidate is ignored.
	Router []routeRule `json:"router"`
	// Executor plays each Ticket's Executor, by the Ticket's title.
	Executor map[string][]turn `json:"executor"`
	Steps    []step            `json:"steps"`
	Expect   expectations      `json:"expect"`
	// Settings are more of the service's settings (SUPERAGENT_…), as an
	// operator would set them.
	Settings map[string]string `json:"settings"`
	// Secrets are the repository's secrets, set through the API before
	// the day starts (they need SUPERAGENT_SECRETS_KEY in Settings).
	Secrets map[string]string `json:"secrets"`
}

type scenarioFeishu struct {
	Chat string `json:"chat"`
	// People are open_id → display name, as the contact API answers.
	People map[string]string `json:"people"`
	// Allowed may ask the bot for work (SUPERAGENT_FEISHU_ALLOWED_MEMBERS).
	Allowed []string `json:"allowed"`
}

type routeRule struct {
	Match string `json:"match"`
	Title string `json:"title"`
	Repo  string `json:"repo"`
}

// A turn is what the Executor does when new input reaches it: the first
// turn not yet taken whose on appears in that input. Its calls are made
// one per model request, then it answers text and the turn ends.
type turn struct {
	On    string         `json:"on"`
	Calls []scriptedCall `json:"calls"`
	Text  string         `json:"text"`
}

type scriptedCall struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"args"`
}

type step struct {
	// Name is unique in the scenario: the delivery id is derived from it,
	// and templates name what the step made ({{comment:<name>}}).
	Name string `json:"name"`
	// A GitHub delivery: its X-GitHub-Event, the fixture of testdata it
	// derives from, who sends it, and fields set on it (dotted paths; a
	// value "{{…}}" is a template, see resolve).
	GitHub string         `json:"github"`
	From   string         `json:"from"`
	By     string         `json:"by"`
	Set    map[string]any `json:"set"`
	// Run is the workflow run of a workflow_run delivery, registered on
	// the fake GitHub first.
	Run *scenarioRun `json:"run"`
	// Review names the pull_request_review step a review comment belongs
	// to: GitHub sends the comments of a review before the review.
	Review string `json:"review"`
	// Merge has the person mark the Ticket's pull request ready and merge
	// it on the fake GitHub before the pull_request.closed delivery.
	Merge bool `json:"merge"`
	// A Feishu message.
	Feishu *feishuMessage `json:"feishu"`
	// Burst sends the next step at once, without waiting for the service
	// to settle.
	Burst bool `json:"burst"`
	// Card is what must have become of this step's card at the end.
	Card *cardExpect `json:"card"`
}

type scenarioRun struct {
	Name string           `json:"name"`
	Jobs []scenarioRunJob `json:"jobs"`
}

type scenarioRunJob struct {
	Name       string   `json:"name"`
	Conclusion string   `json:"conclusion"`
	Steps      []string `json:"steps"` // name=conclusion
	Log        string   `json:"log"`
}

type feishuMessage struct {
	ID      string `json:"id"`
	From    string `json:"from"`
	Text    string `json:"text"`
	Mention bool   `json:"mention"`
	// Root and Parent make it a reply in a conversation; Thread is the
	// thread id Feishu gives a conversation the bot replied to in thread.
	Root   string `json:"root"`
	Parent string `json:"parent"`
	Thread string `json:"thread"`
}

type cardExpect struct {
	// None: the delivery made no card (dropped, with Reason in the
	// delivery's error).
	None   bool   `json:"none"`
	State  string `json:"state"`
	Ticket string `json:"ticket"`
}

type expectations struct {
	// Tickets are every Ticket at the end, in the order they opened.
	Tickets []ticketExpect `json:"tickets"`
	// PullRequests are helloRepo's pull requests at the end.
	PullRequests []prExpect `json:"pull_requests"`
	// GitHubComments: how many of the bot's issue comments contain each
	// text (progress comments left out).
	GitHubComments map[string]int `json:"github_comments"`
	// ReviewReplies: how many review comment replies contain each text.
	ReviewReplies map[string]int `json:"review_replies"`
	// FeishuReplies: how many of the bot's Feishu text messages contain
	// each text.
	FeishuReplies map[string]int `json:"feishu_replies"`
	// ResolvedThreads: how many review threads are resolved at the end.
	ResolvedThreads int `json:"resolved_threads"`
	// StatusCards: how many Feishu status cards the bot posted (each
	// patched in place afterwards, never posted again).
	StatusCards int `json:"status_cards"`
	// Reactions: content → how many the bot added.
	Reactions map[string]int `json:"reactions"`
	// Saw and NeverSaw: what each Ticket's Executor model was and was not
	// given, by the Ticket's title (templates allowed).
	Saw      map[string][]string `json:"saw"`
	NeverSaw map[string][]string `json:"never_saw"`
	// Logs: INFO messages and how often each was logged.
	Logs map[string]int `json:"logs"`
	// RemoteNeverHolds: texts no object of the repository on GitHub
	// holds at the end (any ref, the checkpoints' included).
	RemoteNeverHolds []string `json:"remote_never_holds"`
	// DatabaseIntact: the database passes its own integrity check
	// (SQLite's PRAGMA integrity_check; PostgreSQL's catalog answers).
	DatabaseIntact bool `json:"database_intact"`
}

type ticketExpect struct {
	Title string `json:"title"`
	State string `json:"state"`
}

type prExpect struct {
	Draft   bool `json:"draft"`
	State   string
	Merged  bool `json:"merged"`
	Commits int  `json:"commits"`
}

func (p *prExpect) UnmarshalJSON(b []byte) error {
	var raw struct {
		Draft   bool   `json:"draft"`
		State   string `json:"state"`
		Merged  bool   `json:"merged"`
		Commits int    `json:"commits"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*p = prExpect{Draft: raw.Draft, State: raw.State, Merged: raw.Merged, Commits: raw.Commits}
	return nil
}

// TestScenarios replays every scenario of testdata/scenarios through the
// binary on both databases, with signed deliveries against the fakes
// (every GitHub payload checked against GitHub's webhook schemas, every
// Feishu event built from the SDK's types), and checks where each card
// went, the Tickets' final states, what was said and what the model saw.
func TestScenarios(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	for _, sc := range loadScenarios(t) {
		t.Run(sc.name, func(t *testing.T) {
			// Each day has fakes, processes and databases of its own; most
			// of a replay is waiting for the service to settle.
			t.Parallel()
			databases(t, func(t *testing.T, dbURL string) {
				newReplay(t, sc.name, sc.scenario, dbURL).run()
			})
		})
	}
}

type namedScenario struct {
	name string
	scenario
}

// loadScenarios reads every scenario, refusing fields the format does not
// have.
func loadScenarios(t *testing.T) []namedScenario {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*", "scenario.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var out []namedScenario
	for _, file := range files {
		raw, err := os.ReadFile(file)
		require.NoError(t, err)
		var sc scenario
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&sc), file)
		out = append(out, namedScenario{name: filepath.Base(filepath.Dir(file)), scenario: sc})
	}
	return out
}

// TestScenarioFiles checks what the replay cannot notice by itself, fast
// and without the binary: every step is a known kind whose fixture has
// every field it sets, every router rule and scripted turn is reached by
// some step's text (a misspelt one would silently never run), and every
// Ticket an expectation names is one the scenario opens.
func TestScenarioFiles(t *testing.T) {
	t.Parallel()
	for _, sc := range loadScenarios(t) {
		t.Run(sc.name, func(t *testing.T) {
			require.NotEmpty(t, sc.Description)
			var texts []string
			names := map[string]bool{}
			for _, s := range sc.Steps {
				require.False(t, names[s.Name], "step name %q is unique", s.Name)
				names[s.Name] = true
				switch {
				case s.GitHub != "":
					require.Nil(t, s.Feishu, "step %q", s.Name)
					require.NotNil(t, sc.Repo, "step %q: GitHub steps need the scenario's repo", s.Name)
					fixture := readFixture(t, s.From)
					for path, v := range s.Set {
						_, _, err := field(fixture, path)
						require.NoError(t, err, "step %q, fixture %s", s.Name, s.From)
						if str, ok := v.(string); ok {
							texts = append(texts, str)
						}
					}
					if s.Run != nil {
						for _, j := range s.Run.Jobs {
							texts = append(texts, fmt.Sprintf("host: job %q of workflow run", j.Name), j.Log)
							for _, st := range j.Steps {
								if n, c, _ := strings.Cut(st, "="); c == "failure" {
									texts = append(texts, fmt.Sprintf("failed at step %q", n))
								}
							}
						}
					}
				case s.Feishu != nil:
					require.NotNil(t, sc.Feishu, "step %q: Feishu steps need the scenario's feishu", s.Name)
					require.Contains(t, sc.Feishu.People, s.Feishu.From, "step %q: the sender is one of the chat's people", s.Name)
					require.True(t, strings.HasPrefix(s.Feishu.ID, "om_"), "step %q: a Feishu message id starts om_", s.Name)
					texts = append(texts, s.Feishu.Text)
				default:
					t.Fatalf("step %q is neither a GitHub delivery nor a Feishu message", s.Name)
				}
				if s.Review != "" {
					require.True(t, names[s.Review] || stepNamed(sc.Steps, s.Review), "step %q: review step %q exists", s.Name, s.Review)
				}
			}
			all := strings.Join(texts, "\n")
			titles := map[string]bool{}
			for _, rule := range sc.Router {
				require.Contains(t, all, rule.Match, "router rule %q is reached by a step", rule.Title)
				titles[rule.Title] = true
			}
			for title, turns := range sc.Executor {
				require.True(t, titles[title], "the Executor script %q is a Ticket a router rule opens", title)
				for _, tn := range turns {
					if tn.On != "Assignment" {
						require.Contains(t, all, tn.On, "the turn on %q of %q is reached by a step", tn.On, title)
					}
				}
			}
			for _, tk := range sc.Expect.Tickets {
				require.True(t, titles[tk.Title], "the expected Ticket %q is one a router rule opens", tk.Title)
			}
			for _, s := range sc.Steps {
				if s.Card != nil && s.Card.Ticket != "" {
					require.True(t, titles[s.Card.Ticket], "step %q: Ticket %q is one a router rule opens", s.Name, s.Card.Ticket)
				}
			}
		})
	}
}

func stepNamed(steps []step, name string) bool {
	for _, s := range steps {
		if s.Name == name {
			return true
		}
	}
	return false
}

// replay is one scenario running against one database.
type replay struct {
	t     *testing.T
	name  string
	sc    scenario
	dbURL string
	gh    *fakegithub.Server
	fs    *fakefeishu.Server
	model *fakeopenai.Server
	p     *proc
	store *db.DB
	bare  string

	mu   sync.Mutex
	vars map[string]any // what steps made: comment:<step>, run:<step>, …
}

const (
	scenarioSecret   = "scenario-webhook-secret"
	scenarioToken    = "scenario-admin-token-0123456789"
	scenarioFSToken  = "scenario-verification-token"
	scenarioFSKey    = "scenario-encrypt-key"
	scenarioModelKey = "sk-test-scenario-key-0001"
)

var scenarioInstallation = map[string]any{"id": 957387, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uOTU3Mzg3"}

func newReplay(t *testing.T, name string, sc scenario, dbURL string) *replay {
	r := &replay{t: t, name: name, sc: sc, dbURL: dbURL, vars: map[string]any{}}
	r.model = fakeopenai.New(t)
	r.model.Fallback(fakeopenai.Respond(func(req fakeopenai.Request) fakeopenai.Reply {
		if req.Model == "router-model" {
			return r.route(req)
		}
		return r.execute(req)
	}))
	env := map[string]string{
		"SUPERAGENT_ADDR":             freeAddr(t),
		"SUPERAGENT_DATA_DIR":         t.TempDir(),
		"SUPERAGENT_DATABASE_URL":     dbURL,
		"SUPERAGENT_ADMIN_TOKEN":      scenarioToken,
		"SUPERAGENT_MODEL_BASE_URL":   r.model.URL(),
		"SUPERAGENT_MODEL_API_KEY":    scenarioModelKey,
		"SUPERAGENT_MODEL":            "executor-model",
		"SUPERAGENT_ROUTER_MODEL":     "router-model",
		"SUPERAGENT_ROUTING_DEBOUNCE": "100ms",
	}
	maps.Copy(env, sc.Settings)
	if sc.Repo != nil {
		r.gh = fakegithub.New(t)
		r.bare = r.gh.AddRepo(t, helloRepo, "main", sc.Repo)
		for login, level := range sc.People {
			r.gh.SetPermission(helloRepo, login, level)
		}
		env["SUPERAGENT_GITHUB_APP_ID"] = fmt.Sprint(r.gh.AppID)
		env["SUPERAGENT_GITHUB_PRIVATE_KEY"] = string(r.gh.PrivateKey())
		env["SUPERAGENT_GITHUB_API_URL"] = r.gh.URL
		env["SUPERAGENT_GITHUB_WEBHOOK_SECRET"] = scenarioSecret
	}
	if sc.Feishu != nil {
		r.fs = fakefeishu.New(t)
		for id, name := range sc.Feishu.People {
			r.fs.AddUser(fakefeishu.User{OpenID: id, Name: name})
		}
		env["SUPERAGENT_FEISHU_APP_ID"] = fakefeishu.AppID
		env["SUPERAGENT_FEISHU_APP_SECRET"] = "scenario-app-secret"
		env["SUPERAGENT_FEISHU_VERIFICATION_TOKEN"] = scenarioFSToken
		env["SUPERAGENT_FEISHU_ENCRYPT_KEY"] = scenarioFSKey
		env["SUPERAGENT_FEISHU_BASE_URL"] = r.fs.URL
		env["SUPERAGENT_FEISHU_ALLOWED_MEMBERS"] = strings.Join(sc.Feishu.Allowed, ",")
	}
	r.p = start(t, "serve", env, "serve")
	r.p.waitHTTP("/readyz", 30*time.Second)
	r.store = openDB(t, dbURL)
	if r.gh != nil {
		installApp(t, r.p, scenarioSecret, name+"-install", dbURL)
	}
	for secretName, value := range sc.Secrets {
		body := marshal(t, map[string]string{"value": value})
		req, err := http.NewRequest(http.MethodPut, "http://"+r.p.addr+"/api/repos/"+helloRepo+"/secrets/"+secretName, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+scenarioToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Less(t, resp.StatusCode, 300, "setting secret %s", secretName)
	}
	t.Cleanup(func() {
		if t.Failed() {
			r.dump()
		}
	})
	return r
}

func (r *replay) run() {
	t := r.t
	names := map[string]bool{}
	for i, s := range r.sc.Steps {
		require.NotEmpty(t, s.Name, "step %d has a name", i+1)
		require.False(t, names[s.Name], "step name %q is unique", s.Name)
		names[s.Name] = true
		switch {
		case s.GitHub != "":
			r.deliverGitHub(s)
		case s.Feishu != nil:
			r.deliverFeishu(s, i+1)
		default:
			t.Fatalf("step %q is neither a GitHub delivery nor a Feishu message", s.Name)
		}
		if !s.Burst {
			r.settle("step " + s.Name)
		}
	}
	r.settle("the end of the day")
	code, _ := r.p.stop(30 * time.Second) // the service's own shutdown deadline; the day has settled, so it is quick
	require.Equal(t, 0, code)
	r.check()
}

// settle waits until every delivery is processed, no job but the
// watchdogs is waiting or running, and nothing is left to send: twice in a
// row, so a job that another job's end enqueues is seen.
func (r *replay) settle(what string) {
	quiet := 0
	waitFor(r.t, 4*time.Minute, "the service to settle after "+what, func() bool {
		var busy int
		require.NoError(r.t, r.store.QueryRow(context.Background(), `SELECT
  (SELECT count(*) FROM deliveries WHERE state = 'received') +
  (SELECT count(*) FROM river_job WHERE state IN ('available', 'pending', 'running', 'scheduled', 'retryable')
     AND kind NOT IN ('route_watchdog', 'executor_watchdog')) +
  (SELECT count(*) FROM outgoing_messages WHERE state IN ('pending', 'sending'))`).Scan(&busy))
		if busy > 0 {
			quiet = 0
			return false
		}
		quiet++
		if quiet < 2 {
			time.Sleep(100 * time.Millisecond)
			return false
		}
		return true
	})
}

// --- GitHub deliveries ---

func (r *replay) deliverGitHub(s step) {
	t := r.t
	require.NotNil(t, r.gh, "step %q: a GitHub step needs the scenario's repo", s.Name)
	payload := readFixture(t, s.From)
	action, _ := payload["action"].(string)
	payload["installation"] = scenarioInstallation
	repoJSON := helloRepoJSON(t)
	payload["repository"] = repoJSON
	by := s.By
	if by == "" {
		by = "Codertocat"
	}
	user := r.user(by)
	payload["sender"] = user

	switch s.GitHub + "." + action {
	case "issues.opened":
		issue := payload["issue"].(map[string]any)
		issue["user"] = user
		r.apply(s, payload)
		r.gh.AddIssue(helloRepo, toInt(issue["number"]), issue["title"].(string), str(issue["body"]), by)
	case "issue_comment.created":
		c := payload["comment"].(map[string]any)
		c["user"] = user
		r.apply(s, payload)
		number := toInt(payload["issue"].(map[string]any)["number"])
		id := r.gh.AddComment(helloRepo, number, by, c["body"].(string))
		r.fillComment(c, id, fmt.Sprintf("https://github.com/%s/issues/%d#issuecomment-%d", helloRepo, number, id),
			fmt.Sprintf("https://api.github.com/repos/%s/issues/comments/%d", helloRepo, id), "IC_")
		c["issue_url"] = fmt.Sprintf("https://api.github.com/repos/%s/issues/%d", helloRepo, number)
		r.save("comment:"+s.Name, id)
	case "pull_request_review.submitted":
		pr := r.pullRequest()
		rv := payload["review"].(map[string]any)
		rv["user"] = user
		r.fillPR(payload["pull_request"].(map[string]any), pr)
		r.apply(s, payload)
		id := r.review(s.Name, pr.Number)
		rv["id"], rv["node_id"], rv["commit_id"] = id, fmt.Sprintf("PRR_%d", id), pr.HeadSHA
		rv["html_url"] = fmt.Sprintf("https://github.com/%s/pull/%d#pullrequestreview-%d", helloRepo, pr.Number, id)
		rv["pull_request_url"] = fmt.Sprintf("https://api.github.com/repos/%s/pulls/%d", helloRepo, pr.Number)
		r.save("review:"+s.Name, id)
	case "pull_request_review_comment.created":
		pr := r.pullRequest()
		c := payload["comment"].(map[string]any)
		c["user"] = user
		r.fillPR(payload["pull_request"].(map[string]any), pr)
		r.apply(s, payload)
		require.NotEmpty(t, s.Review, "step %q: a review comment names its review's step", s.Name)
		review := r.review(s.Review, pr.Number)
		id, thread := r.gh.AddReviewComment(helloRepo, pr.Number, fakegithub.ReviewCommentSpec{Login: by, Body: c["body"].(string),
			Path: c["path"].(string), Line: toInt(c["line"]), ReviewID: review})
		r.fillComment(c, id, fmt.Sprintf("https://github.com/%s/pull/%d#discussion_r%d", helloRepo, pr.Number, id),
			fmt.Sprintf("https://api.github.com/repos/%s/pulls/comments/%d", helloRepo, id), "PRRC_")
		c["commit_id"], c["original_commit_id"] = pr.HeadSHA, pr.HeadSHA
		c["pull_request_url"] = fmt.Sprintf("https://api.github.com/repos/%s/pulls/%d", helloRepo, pr.Number)
		c["pull_request_review_id"] = review
		r.save("review_comment:"+s.Name, id)
		r.save("review_thread:"+s.Name, thread)
	case "workflow_run.completed":
		require.NotNil(t, s.Run, "step %q: a workflow_run needs its run", s.Name)
		pr := r.pullRequest()
		spec := fakegithub.WorkflowRunSpec{Name: s.Run.Name, HeadBranch: pr.Head}
		for _, j := range s.Run.Jobs {
			js := fakegithub.JobSpec{Name: j.Name, Conclusion: j.Conclusion, Log: j.Log}
			for _, st := range j.Steps {
				n, c, _ := strings.Cut(st, "=")
				js.Steps = append(js.Steps, fakegithub.StepSpec{Name: n, Conclusion: c})
			}
			spec.Jobs = append(spec.Jobs, js)
		}
		run := r.gh.AddWorkflowRun(helloRepo, pr.HeadSHA, spec)
		w := payload["workflow_run"].(map[string]any)
		w["id"], w["name"], w["conclusion"], w["html_url"] = run.ID, s.Run.Name, "failure", run.HTMLURL
		// A workflow run names its repositories in their short form: the
		// fixture's fields, with this repository's values.
		lite := map[string]any{}
		for k, v := range w["repository"].(map[string]any) {
			lite[k] = v
			if mine, ok := repoJSON[k]; ok && k != "owner" {
				lite[k] = mine
			}
		}
		w["head_sha"], w["head_branch"], w["repository"], w["head_repository"] = pr.HeadSHA, pr.Head, lite, lite
		ref := func(branch, sha string) map[string]any {
			return map[string]any{"ref": branch, "sha": sha, "repo": map[string]any{"id": repoJSON["id"], "url": repoJSON["url"], "name": repoJSON["name"]}}
		}
		w["pull_requests"] = []any{map[string]any{"id": pr.Number, "number": pr.Number, "url": repoJSON["url"].(string) + "/pulls/" + strconv.Itoa(pr.Number),
			"head": ref(pr.Head, pr.HeadSHA), "base": ref("main", "")}}
		w["actor"], w["triggering_actor"] = user, user
		w["head_commit"].(map[string]any)["id"] = pr.HeadSHA
		r.apply(s, payload)
		r.save("run:"+s.Name, run.ID)
		for i, id := range run.JobIDs {
			r.save(fmt.Sprintf("job:%s:%d", s.Name, i), id)
		}
	case "pull_request.closed":
		pr := r.pullRequest()
		if s.Merge {
			r.gh.ReadyForReview(t, helloRepo, pr.Number)
			r.gh.MergeAs(t, helloRepo, pr.Number)
			pr = r.pullRequest()
		}
		cpr := payload["pull_request"].(map[string]any)
		r.fillPR(cpr, pr)
		cpr["merged"], cpr["state"] = pr.Merged, "closed"
		cpr["merged_by"] = user
		if pr.Merged {
			cpr["merge_commit_sha"] = pr.MergeCommitSHA
		}
		r.apply(s, payload)
	default:
		r.apply(s, payload)
	}
	deliverGitHub(t, r.p, scenarioSecret, s.GitHub, r.name+"-"+s.Name, marshal(t, payload))
}

// apply sets the step's fields on payload, templates resolved.
func (r *replay) apply(s step, payload map[string]any) {
	keys := make([]string, 0, len(s.Set))
	for k := range s.Set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		setPath(r.t, payload, k, r.resolve(s.Set[k], 0))
	}
}

func setPath(t *testing.T, m map[string]any, path string, v any) {
	parent, key, err := field(m, path)
	require.NoError(t, err)
	parent[key] = v
}

// field finds a dotted path in a fixture: the object holding it and its
// key. A path the fixture does not have is an error: a scenario sets only
// fields the platform sends.
func field(m map[string]any, path string) (map[string]any, string, error) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			return nil, "", fmt.Errorf("%s: %s is not an object of the fixture", path, p)
		}
		m = next
	}
	key := parts[len(parts)-1]
	if _, ok := m[key]; !ok {
		return nil, "", fmt.Errorf("%s: the fixture does not have it; a scenario sets only fields the platform sends", path)
	}
	return m, key, nil
}

// user is the fixtures' user object (Codertocat's) for login, with the
// fake GitHub's id for it.
func (r *replay) user(login string) map[string]any {
	sender := readFixture(r.t, "issue_comment.created.json")["sender"].(map[string]any)
	u := map[string]any{}
	for k, v := range sender {
		if s, ok := v.(string); ok {
			v = strings.ReplaceAll(s, "Codertocat", login)
		}
		u[k] = v
	}
	id := r.gh.UserID(login)
	u["id"], u["node_id"] = id, fmt.Sprintf("U_%d", id)
	u["avatar_url"] = fmt.Sprintf("https://avatars.githubusercontent.com/u/%d?v=4", id)
	return u
}

func (r *replay) fillComment(c map[string]any, id int64, html, api, nodePrefix string) {
	c["id"], c["node_id"], c["html_url"], c["url"] = id, nodePrefix+strconv.FormatInt(id, 10), html, api
}

// fillPR makes a webhook's pull_request object the fake's pull request.
func (r *replay) fillPR(obj map[string]any, pr fakegithub.PullRequest) {
	repoJSON := helloRepoJSON(r.t)
	obj["number"], obj["title"], obj["body"], obj["draft"], obj["state"] = pr.Number, pr.Title, pr.Body, pr.Draft, pr.State
	obj["html_url"] = fmt.Sprintf("https://github.com/%s/pull/%d", helloRepo, pr.Number)
	obj["url"] = fmt.Sprintf("https://api.github.com/repos/%s/pulls/%d", helloRepo, pr.Number)
	head, base := obj["head"].(map[string]any), obj["base"].(map[string]any)
	head["ref"], head["sha"], head["repo"], head["label"] = pr.Head, pr.HeadSHA, repoJSON, "Codertocat:"+pr.Head
	base["ref"], base["repo"], base["label"] = pr.Base, repoJSON, "Codertocat:"+pr.Base
	obj["user"] = r.user(pr.User)
}

// pullRequest is the Ticket's pull request as the fake holds it now.
func (r *replay) pullRequest() fakegithub.PullRequest {
	prs := r.gh.PullRequests(helloRepo)
	require.Len(r.t, prs, 1, "the scenario's day has one pull request")
	return prs[0]
}

// review is the id of the review step name submits on pull request
// number, filed on the fake GitHub when first asked for (its comments
// come first).
func (r *replay) review(name string, number int) int64 {
	r.mu.Lock()
	id, ok := r.vars["review:"+name].(int64)
	r.mu.Unlock()
	if ok {
		return id
	}
	for _, s := range r.sc.Steps {
		if s.Name == name && s.GitHub == "pull_request_review" {
			by := s.By
			if by == "" {
				by = "Codertocat"
			}
			id = r.gh.AddReviewBody(helloRepo, number, by, strings.ToUpper(str(s.Set["review.state"])), str(s.Set["review.body"]))
			r.save("review:"+name, id)
			return id
		}
	}
	r.t.Fatalf("no pull_request_review step %q", name)
	return 0
}

func (r *replay) save(key string, v any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.vars[key] = v
}

// template is a whole-string template: "{{name}}".
var template = regexp.MustCompile(`^\{\{([a-z_]+(?::[a-zA-Z0-9_:.-]+)?|pr\.[a-z_]+)\}\}$`)

// embedded are templates inside a longer string.
var embedded = regexp.MustCompile(`\{\{([a-z_]+(?::[a-zA-Z0-9_:.-]+)?|pr\.[a-z_]+)\}\}`)

// resolve replaces templates in v: "{{name}}" becomes the typed value
// (a number stays a number), and templates inside a longer string become
// text. Names: comment:<step>, review:<step>, review_comment:<step>,
// review_thread:<step>, run:<step>, job:<step>:<index>, user:<login>,
// pr.number, pr.head, pr.head_sha, and card (in an Executor turn: the
// latest card it was given).
func (r *replay) resolve(v any, card int64) any {
	switch x := v.(type) {
	case string:
		if m := template.FindStringSubmatch(x); m != nil {
			return r.value(m[1], card)
		}
		return embedded.ReplaceAllStringFunc(x, func(s string) string {
			return fmt.Sprint(r.value(embedded.FindStringSubmatch(s)[1], card))
		})
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = r.resolve(e, card)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = r.resolve(e, card)
		}
		return out
	}
	return v
}

func (r *replay) value(name string, card int64) any {
	switch {
	case name == "card":
		return card
	case strings.HasPrefix(name, "user:"):
		return r.user(strings.TrimPrefix(name, "user:"))
	case strings.HasPrefix(name, "pr."):
		prs := r.gh.PullRequests(helloRepo)
		if len(prs) != 1 {
			r.t.Errorf("scenario %s: {{%s}} with %d pull requests", r.name, name, len(prs))
			return 0
		}
		pr := prs[0]
		switch name {
		case "pr.number":
			return pr.Number
		case "pr.head":
			return pr.Head
		case "pr.head_sha":
			return pr.HeadSHA
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.vars[name]
	if !ok {
		r.t.Errorf("scenario %s: template {{%s}} names nothing a step made", r.name, name)
	}
	return v
}

// --- Feishu messages ---

func (r *replay) deliverFeishu(s step, seq int) {
	t := r.t
	require.NotNil(t, r.fs, "step %q: a Feishu step needs the scenario's feishu", s.Name)
	m := s.Feishu
	content, err := json.Marshal(map[string]string{"text": m.Text})
	require.NoError(t, err)
	now := time.Now()
	r.fs.AddMessage(fakefeishu.Message{ID: m.ID, ChatID: r.sc.Feishu.Chat, RootID: m.Root, ParentID: m.Parent, ThreadID: m.Thread, MsgType: "text",
		SenderID: m.From, SenderType: "user", Content: string(content), CreateTime: now})
	ptr := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	ms := strconv.FormatInt(now.UnixMilli(), 10)
	msg := &larkim.EventMessage{MessageId: ptr(m.ID), RootId: ptr(m.Root), ParentId: ptr(m.Parent), ThreadId: ptr(m.Thread), CreateTime: ptr(ms), UpdateTime: ptr(ms),
		ChatId: ptr(r.sc.Feishu.Chat), ChatType: ptr("group"), MessageType: ptr("text"), Content: ptr(string(content))}
	if m.Mention {
		require.Contains(t, m.Text, "@_user_1", "step %q: a mention is written @_user_1 in the text, as Feishu sends it", s.Name)
		msg.Mentions = []*larkim.MentionEvent{{Key: ptr("@_user_1"), Id: &larkim.UserId{OpenId: ptr(fakefeishu.BotOpenID)},
			Name: ptr(fakefeishu.BotName), TenantKey: ptr("fake_tenant")}}
	}
	event := &larkim.P2MessageReceiveV1Data{
		Sender:  &larkim.EventSender{SenderId: &larkim.UserId{OpenId: ptr(m.From)}, SenderType: ptr("user"), TenantKey: ptr("fake_tenant")},
		Message: msg,
	}
	body := fakefeishu.EventV2(larkevent.EventHeader{EventID: fmt.Sprintf("%s-%04d", r.name, seq), EventType: "im.message.receive_v1",
		CreateTime: ms, Token: scenarioFSToken, AppID: fakefeishu.AppID, TenantKey: "fake_tenant"}, event)
	resp, err := http.DefaultClient.Do(fakefeishu.EventRequest(t, "http://"+r.p.addr+"/webhooks/feishu", scenarioFSKey, body, now))
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "step %q", s.Name)
}

// --- the scripted model ---

// route plays the main Session over the candidates of its latest input.
func (r *replay) route(req fakeopenai.Request) fakeopenai.Reply {
	last := req.LastMessage()
	if last.Role != "user" {
		return fakeopenai.Text("Nothing else to route.")
	}
	var decisions []map[string]any
	for _, c := range candidates(last.Content) {
		d := map[string]any{"candidate": c.id, "action": "ignore", "note": "no request for work"}
		for _, rule := range r.sc.Router {
			if strings.Contains(c.text, rule.Match) {
				d = map[string]any{"candidate": c.id, "action": "new", "title": rule.Title, "note": "explicit request from someone allowed"}
				if rule.Repo != "" {
					d["repo"] = rule.Repo
				}
				break
			}
		}
		decisions = append(decisions, d)
	}
	var calls []fakeopenai.ToolCall
	if len(decisions) > 0 {
		args, _ := json.Marshal(map[string]any{"decisions": decisions})
		calls = append(calls, fakeopenai.Call("", "orchestrator_route", string(args)))
	}
	// A Report's question for a person is forwarded unchanged, as the
	// main Session is told to.
	calls = append(calls, forwards(last.Content)...)
	if len(calls) == 0 {
		return fakeopenai.Text("Noted.")
	}
	return fakeopenai.Calls(calls...)
}

// forwardable finds, in a main Session turn, the Reports the host says may
// be forwarded as they are.
var forwardable = regexp.MustCompile(`orchestrator_forward \{"report": ([0-9]+)\}`)

// forwards are the orchestrator_forward calls for every Report a main
// Session turn's content says may be forwarded as it is.
func forwards(content string) []fakeopenai.ToolCall {
	var calls []fakeopenai.ToolCall
	for _, m := range forwardable.FindAllStringSubmatch(content, -1) {
		calls = append(calls, fakeopenai.Call("", "orchestrator_forward", `{"report":`+m[1]+`}`))
	}
	return calls
}

var assignment = regexp.MustCompile(`Assignment: ticket [0-9]+ "([^"]*)"`)

var anyCard = regexp.MustCompile(`(?m)^card ([0-9]+) · `)

// execute plays a Ticket's Executor: the conversation is cut into turns at
// each answer without tool calls; each turn is given to the first scripted
// turn not yet taken whose on appears in what started it.
func (r *replay) execute(req fakeopenai.Request) fakeopenai.Reply {
	title := ""
	for _, m := range req.Messages {
		if a := assignment.FindStringSubmatch(m.Content); m.Role == "user" && a != nil {
			title = a[1]
			break
		}
	}
	script, ok := r.sc.Executor[title]
	if !ok {
		return fakeopenai.Text("No script for this Ticket.")
	}
	type segment struct {
		input string // the user messages that started it
		calls int    // tool calls made in it
		card  int64
	}
	var segs []segment
	open := false
	for _, m := range req.Messages {
		switch {
		case m.Role == "user" && (!open || len(segs) == 0):
			if !open {
				segs = append(segs, segment{})
				open = true
			}
			s := &segs[len(segs)-1]
			if s.calls == 0 {
				s.input += m.Content + "\n"
				for _, c := range anyCard.FindAllStringSubmatch(m.Content, -1) {
					s.card, _ = strconv.ParseInt(c[1], 10, 64)
				}
			}
		case m.Role == "assistant" && len(m.ToolCalls) == 0 && open:
			open = false
		case m.Role == "assistant" && open:
			segs[len(segs)-1].calls += len(m.ToolCalls)
		}
	}
	if !open || len(segs) == 0 {
		return fakeopenai.Text("Nothing new.")
	}
	taken := map[int]bool{}
	pick := func(input string) int {
		for i, tn := range script {
			if !taken[i] && strings.Contains(input, tn.On) {
				taken[i] = true
				return i
			}
		}
		return -1
	}
	var current int
	for _, s := range segs {
		current = pick(s.input)
	}
	s := segs[len(segs)-1]
	if current < 0 {
		return fakeopenai.Text("Nothing for me to do here.")
	}
	tn := script[current]
	if s.calls < len(tn.Calls) {
		c := tn.Calls[s.calls]
		args, _ := json.Marshal(r.resolve(c.Args, s.card))
		return fakeopenai.Calls(fakeopenai.Call("", c.Tool, string(args)))
	}
	text := tn.Text
	if text == "" {
		text = "Done for now."
	}
	return fakeopenai.Text(text)
}

// --- the end of the day ---

func (r *replay) check() {
	t := r.t
	ctx := context.Background()
	x := r.sc.Expect

	if x.DatabaseIntact {
		if strings.HasPrefix(r.dbURL, "postgres") {
			var n int
			require.NoError(t, r.store.QueryRow(ctx, `SELECT count(*) FROM pg_catalog.pg_class`).Scan(&n))
		} else {
			var verdict string
			require.NoError(t, r.store.QueryRow(ctx, `PRAGMA integrity_check`).Scan(&verdict))
			require.Equal(t, "ok", verdict, "SQLite's integrity check")
		}
	}
	if len(x.RemoteNeverHolds) > 0 {
		objects, err := exec.Command("git", "--git-dir", r.bare, "rev-list", "--objects", "--all").Output()
		require.NoError(t, err)
		for line := range strings.SplitSeq(strings.TrimSpace(string(objects)), "\n") {
			sha, _, _ := strings.Cut(line, " ")
			content, err := exec.Command("git", "--git-dir", r.bare, "cat-file", "-p", sha).Output()
			require.NoError(t, err)
			for _, text := range x.RemoteNeverHolds {
				require.NotContains(t, string(content), text, "object %s on the remote", sha)
			}
		}
	}

	// Tickets: exactly these, in order.
	type ticketRow struct {
		id           int64
		title, state string
	}
	var tks []ticketRow
	rows, err := r.store.Query(ctx, `SELECT id, title, state FROM tickets ORDER BY id`)
	require.NoError(t, err)
	for rows.Next() {
		var tk ticketRow
		require.NoError(t, rows.Scan(&tk.id, &tk.title, &tk.state))
		tks = append(tks, tk)
	}
	require.NoError(t, rows.Err())
	rows.Close()
	var got, want []string
	byTitle := map[string]int64{}
	for _, tk := range tks {
		got = append(got, tk.title+": "+tk.state)
		byTitle[tk.title] = tk.id
	}
	for _, tk := range x.Tickets {
		want = append(want, tk.Title+": "+tk.State)
	}
	require.Equal(t, want, got, "the Tickets and their final states (no duplicates)")

	// Where every step's card went.
	for _, s := range r.sc.Steps {
		if s.Card == nil {
			continue
		}
		key := r.name + "-" + s.Name
		if s.Feishu != nil {
			key = "message:" + s.Feishu.ID // Feishu messages are deduplicated on their message id
		}
		var (
			deliveries, n int
			state         string
			ticketID      *int64
		)
		err := r.store.QueryRow(ctx, `SELECT count(DISTINCT d.id), count(c.id), COALESCE(MAX(c.state), ''), MAX(c.ticket_id)
FROM deliveries d LEFT JOIN cards c ON c.delivery_id = d.id WHERE d.dedupe_key = $1`, key).Scan(&deliveries, &n, &state, &ticketID)
		require.Equal(t, 1, deliveries, "step %q was received once", s.Name)
		require.NoError(t, err)
		if s.Card.None {
			require.Zero(t, n, "step %q makes no card", s.Name)
			continue
		}
		require.Equal(t, 1, n, "step %q makes one card", s.Name)
		require.Equal(t, s.Card.State, state, "step %q: the card's state", s.Name)
		if s.Card.Ticket == "" {
			require.Nil(t, ticketID, "step %q: the card belongs to no Ticket", s.Name)
		} else {
			require.NotNil(t, ticketID, "step %q: the card belongs to %q", s.Name, s.Card.Ticket)
			require.Equal(t, byTitle[s.Card.Ticket], *ticketID, "step %q: the card went to %q", s.Name, s.Card.Ticket)
		}
	}

	// Pull requests.
	if r.gh != nil {
		prs := r.gh.PullRequests(helloRepo)
		require.Len(t, prs, len(x.PullRequests), "pull requests")
		for i, want := range x.PullRequests {
			pr := prs[i]
			require.Equal(t, want.Draft, pr.Draft, "pull request %d draft", pr.Number)
			require.Equal(t, want.State, pr.State, "pull request %d state", pr.Number)
			require.Equal(t, want.Merged, pr.Merged, "pull request %d merged", pr.Number)
			if want.Commits > 0 {
				bare := r.bare
				tip := pr.HeadSHA
				out, err := exec.Command("git", "--git-dir", bare, "rev-list", "--count", "main.."+tip).CombinedOutput()
				if pr.Merged {
					out, err = exec.Command("git", "--git-dir", bare, "rev-list", "--count", tip, "^"+pr.MergeCommitSHA+"^1").CombinedOutput()
				}
				require.NoError(t, err, string(out))
				require.Equal(t, strconv.Itoa(want.Commits), strings.TrimSpace(string(out)), "pull request %d commits", pr.Number)
			}
		}
		resolved := 0
		for _, pr := range prs {
			for _, th := range r.gh.ReviewThreads(helloRepo, pr.Number) {
				if th.Resolved {
					resolved++
				}
			}
		}
		require.Equal(t, x.ResolvedThreads, resolved, "resolved review threads")
		// What the bot said on GitHub.
		bot := map[string]int{}
		for _, c := range r.gh.Comments() {
			if !strings.HasSuffix(c.Login, "[bot]") || strings.Contains(c.Body, "<!-- superagent:progress:ticket:") {
				continue
			}
			require.True(t, strings.HasPrefix(c.Body, promptparts.DefaultAgentLine+"\n\n"), "the bot's comment starts with the agent line: %q", c.Body)
			for text := range x.GitHubComments {
				if strings.Contains(c.Body, r.resolve(text, 0).(string)) {
					bot[text]++
				}
			}
		}
		for text, n := range x.GitHubComments {
			require.Equal(t, n, bot[text], "bot comments saying %q", text)
		}
		replies := map[string]int{}
		for _, rq := range r.gh.Requests() {
			if rq.Method == http.MethodPost && strings.Contains(rq.Path, "/replies") {
				for text := range x.ReviewReplies {
					if strings.Contains(string(rq.Body), text) {
						replies[text]++
					}
				}
			}
		}
		for text, n := range x.ReviewReplies {
			require.Equal(t, n, replies[text], "review replies saying %q", text)
		}
		reactions := map[string]int{}
		for _, rc := range r.gh.Reactions() {
			reactions[rc.Content]++
		}
		for content, n := range x.Reactions {
			require.Equal(t, n, reactions[content], "%s reactions on GitHub", content)
		}
	}
	if r.fs != nil {
		said := map[string]int{}
		cards := 0
		for _, m := range r.fs.Messages() {
			if m.SenderType == "app" && m.MsgType == "interactive" {
				cards++
			}
			if m.SenderType != "app" || m.MsgType == "interactive" { // the status card is counted apart
				continue
			}
			for text := range x.FeishuReplies {
				if strings.Contains(m.Content, text) {
					said[text]++
				}
			}
		}
		for text, n := range x.FeishuReplies {
			require.Equal(t, n, said[text], "Feishu messages saying %q", text)
		}
		require.Equal(t, x.StatusCards, cards, "status cards posted on Feishu")
		reactions := map[string]int{}
		for _, rc := range r.fs.Reactions() {
			reactions[rc.EmojiType]++
		}
		for content, n := range x.Reactions {
			if r.gh == nil {
				require.Equal(t, n, reactions[content], "%s reactions on Feishu", content)
			}
		}
	}

	// What each Executor's model was given.
	seen := map[string]*strings.Builder{}
	for _, req := range r.model.Requests() {
		if req.Model != "executor-model" {
			continue
		}
		for _, m := range req.Messages {
			if a := assignment.FindStringSubmatch(m.Content); m.Role == "user" && a != nil {
				if seen[a[1]] == nil {
					seen[a[1]] = &strings.Builder{}
				}
				seen[a[1]].WriteString(req.Text())
				break
			}
		}
	}
	text := func(title string) string {
		if b := seen[title]; b != nil {
			return b.String()
		}
		return ""
	}
	for title, parts := range x.Saw {
		for _, p := range parts {
			require.Contains(t, text(title), r.resolve(p, 0).(string), "the Executor of %q was given it", title)
		}
	}
	for title, parts := range x.NeverSaw {
		for _, p := range parts {
			require.NotContains(t, text(title), r.resolve(p, 0).(string), "the Executor of %q was never given it", title)
		}
	}

	// The lifecycle lines.
	counts := map[string]int{}
	for _, l := range logLines(t, r.p.stderr.String()) {
		if l["level"] == "INFO" {
			counts[l["msg"].(string)]++
		}
	}
	for msg, n := range x.Logs {
		require.Equal(t, n, counts[msg], "INFO %q logged", msg)
	}
	require.NotContains(t, r.p.stderr.String(), scenarioModelKey, "the model key never reaches the logs")
}

// dump logs what a failed scenario did.
func (r *replay) dump() {
	t := r.t
	rows, err := openDB(t, r.dbURL).Query(context.Background(), `SELECT c.id, c.kind, c.state, COALESCE(c.ticket_id, 0), c.text FROM cards c ORDER BY c.id`)
	if err == nil {
		for rows.Next() {
			var (
				id, ticket        int64
				kind, state, text string
			)
			_ = rows.Scan(&id, &kind, &state, &ticket, &text)
			t.Logf("card %d %s %s ticket %d: %s", id, kind, state, ticket, tail(text, 1))
		}
		rows.Close()
	}
	rows, err = openDB(t, r.dbURL).Query(context.Background(), `SELECT id, kind, state, attempt, CAST(errors AS TEXT) FROM river_job WHERE state <> 'completed' ORDER BY id`)
	if err == nil {
		for rows.Next() {
			var (
				id, attempt       int64
				kind, state, errs string
			)
			_ = rows.Scan(&id, &kind, &state, &attempt, &errs)
			t.Logf("job %d %s %s attempt %d errors %s", id, kind, state, attempt, tail(errs, 3))
		}
		rows.Close()
	}
	for i, req := range r.model.Requests() {
		last := req.LastMessage()
		t.Logf("model request %d (%s) last %s: %s", i, req.Model, last.Role, tail(last.Content, 4))
	}
}

func toInt(v any) int {
	switch x := v.(type) {
	case float64:
		return int(x)
	case int:
		return x
	case int64:
		return int(x)
	}
	return 0
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
