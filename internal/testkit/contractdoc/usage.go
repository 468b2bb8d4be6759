package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Use is one platform operation the product's code makes, with where.
type Use struct {
	// ID is the operation: a GitHub operationId ("checks/create"), a
	// webhook event ("issue_comment.created") or a Feishu call
	// ("im.v1.message.reply").
	ID string
	// Method and Path are the route, when there is one.
	Method, Path string
	// Via is how the product reaches it (a go-github method, a raw
	// request, a library).
	Via string
	// Files are the product files that use it, relative to the root.
	Files []string
}

// productFiles lists the product's Go files below root: no tests, no test
// kit, no tools.
func productFiles(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			switch rel {
			case "internal/testkit", "internal/bench", ".git", "node_modules":
				return filepath.SkipDir
			}
			if strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// goGitHubCall is a call on one of go-github's services:
// gh.PullRequests.Get(…), client.App().Apps.ListInstallations(…).
var goGitHubCall = regexp.MustCompile(`\.(Actions|Apps|Checks|Git|Issues|Organizations|PullRequests|Reactions|Repositories|Search|Teams|Users)\.([A-Z]\w*)\(([^)]*)`)

// services maps go-github's service fields to their types.
var services = map[string]string{
	"Actions": "ActionsService", "Apps": "AppsService", "Checks": "ChecksService", "Git": "GitService",
	"Issues": "IssuesService", "Organizations": "OrganizationsService", "PullRequests": "PullRequestsService",
	"Reactions": "ReactionsService", "Repositories": "RepositoriesService", "Search": "SearchService",
	"Teams": "TeamsService", "Users": "UsersService",
}

// rawRequest is a request the product builds itself with go-github's
// NewRequest, its path formatted just before:
//
//	u := fmt.Sprintf("repos/%s/%s/pulls/%d/comments/%d/replies", …)
//	req, err := gh.NewRequest(http.MethodPost, u, body)
var (
	sprintfPath = regexp.MustCompile(`(\w+) :?= fmt\.Sprintf\("(/?(?:repos|app|users|orgs)/[^"]*)"`)
	newRequest  = regexp.MustCompile(`\.NewRequest\(http\.Method(\w+), (\w+),`)
	// apiRequest is a request built with net/http against the REST root
	// (people/oauth.go reads GET /user with a user token):
	//	http.NewRequestWithContext(ctx, http.MethodGet, o.api()+"/user", nil)
	apiRequest = regexp.MustCompile(`http\.NewRequestWithContext\(\w+, http\.Method(\w+), \w+\.api\(\)\s*\+\s*"(/[^"?]*)"`)
)

// webRoutes are the routes on GitHub's web host (not the REST API, so not in
// the OpenAPI description) the product sends people or requests to, by
// the path it writes: the OAuth web flow and the App manifest's new-App
// page. internal/testkit/github/SEMANTICS.md says what the fake follows.
var webRoutes = []struct {
	path, method, via string
}{
	{"/login/oauth/authorize", "GET", "browser redirect (sign-in with GitHub)"},
	{"/login/oauth/access_token", "POST", "raw request (the code for a user token)"},
	{"/settings/apps/new", "POST", "browser form (setup github's App manifest)"},
}

// webUses finds the web routes the product uses: a string literal that
// starts with the route's path.
func webUses(root string, files []string) ([]Use, error) {
	uses := map[string]*Use{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		for _, w := range webRoutes {
			if !strings.Contains(string(b), `"`+w.path) {
				continue
			}
			id := w.method + " " + w.path
			u := uses[id]
			if u == nil {
				u = &Use{ID: id, Method: w.method, Path: w.path, Via: w.via}
				uses[id] = u
			}
			u.Files = append(u.Files, f)
		}
	}
	return sorted(uses), nil
}

// githubUses finds the REST operations the product calls, reading go-github's
// //meta:operation comments for the methods it calls.
func githubUses(root string, files []string, resolve func(method, path string) (string, string)) ([]Use, error) {
	dir, err := moduleDir(root, "github.com/google/go-github/v66")
	if err != nil {
		return nil, err
	}
	ops, err := metaOperations(filepath.Join(dir, "github"))
	if err != nil {
		return nil, err
	}
	uses := map[string]*Use{}
	add := func(method, path, via, file string) {
		id, tpl := resolve(method, path)
		if id == "" {
			id = "undocumented " + method + " " + path
		} else {
			path = tpl
		}
		u := uses[id]
		if u == nil {
			u = &Use{ID: id, Method: method, Path: path, Via: via}
			uses[id] = u
		}
		if !contains(u.Files, file) {
			u.Files = append(u.Files, file)
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		src := string(b)
		for _, m := range goGitHubCall.FindAllStringSubmatch(src, -1) {
			key := services[m[1]] + "." + m[2]
			op, ok := ops[key]
			if !ok {
				continue // not a go-github method (a field of another type)
			}
			for _, o := range pick(op, m[3]) {
				add(o.method, o.path, "go-github "+m[1]+"."+m[2], f)
			}
		}
		paths := map[string]string{}
		for _, m := range sprintfPath.FindAllStringSubmatch(src, -1) {
			paths[m[1]] = "/" + strings.TrimPrefix(m[2], "/")
		}
		for _, m := range newRequest.FindAllStringSubmatch(src, -1) {
			if p, ok := paths[m[2]]; ok {
				add(strings.ToUpper(m[1]), templated(p), "raw request", f)
			}
		}
		for _, m := range apiRequest.FindAllStringSubmatch(src, -1) {
			add(strings.ToUpper(m[1]), m[2], "raw request", f)
		}
		if strings.Contains(src, `"github.com/bradleyfalzon/ghinstallation/v2"`) {
			add("POST", "/app/installations/{installation_id}/access_tokens", "ghinstallation", f)
		}
	}
	return sorted(uses), nil
}

// templated turns a Sprintf path into something Match accepts: each verb
// becomes a sample segment.
func templated(p string) string {
	return regexp.MustCompile(`%[sdv]`).ReplaceAllString(p, "x1")
}

type metaOp struct{ method, path string }

// pick chooses among the routes of a go-github method that has more than
// one by its arguments' convention: an empty name ("") means the route
// without it (Apps.Get(ctx, "") is GET /app, Users.Get(ctx, login) is GET
// /users/{username}).
func pick(ops []metaOp, args string) []metaOp {
	if len(ops) < 2 {
		return ops
	}
	fewer, more := ops[0], ops[0]
	for _, o := range ops {
		if strings.Count(o.path, "{") < strings.Count(fewer.path, "{") {
			fewer = o
		}
		if strings.Count(o.path, "{") > strings.Count(more.path, "{") {
			more = o
		}
	}
	parts := strings.Split(args, ",")
	if len(parts) > 1 && strings.TrimSpace(parts[1]) == `""` {
		return []metaOp{fewer}
	}
	return []metaOp{more}
}

var (
	metaLine = regexp.MustCompile(`^//meta:operation (\w+) (\S+)`)
	funcLine = regexp.MustCompile(`^func \(s \*(\w+)\) (\w+)\(`)
)

// metaOperations reads go-github's //meta:operation comments: service
// type and method → the routes it calls.
func metaOperations(dir string) (map[string][]metaOp, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	out := map[string][]metaOp{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var pending []metaOp
		for _, line := range strings.Split(string(b), "\n") {
			if m := metaLine.FindStringSubmatch(line); m != nil {
				pending = append(pending, metaOp{m[1], m[2]})
				continue
			}
			if m := funcLine.FindStringSubmatch(line); m != nil && len(pending) > 0 {
				out[m[1]+"."+m[2]] = pending
			}
			if !strings.HasPrefix(line, "//") {
				pending = nil
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no //meta:operation comments in %s", dir)
	}
	return out, nil
}

func moduleDir(root, module string) (string, error) {
	cmd := exec.CommandContext(context.Background(), "go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("finding %s: %w", module, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// webhookEvent is an entry of webhooks/github_event.go's githubActions:
// "issues": set("opened", "edited"), or "push": nil.
var webhookEvent = regexp.MustCompile(`(?m)^\s*"(\w+)":\s*(nil|set\(([^)]*)\))`)

// webhookUses reads the events and actions the product acts on.
func webhookUses(root string) ([]Use, error) {
	const file = "webhooks/github_event.go"
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		return nil, err
	}
	start := strings.Index(string(b), "var githubActions")
	if start < 0 {
		return nil, fmt.Errorf("%s: no githubActions", file)
	}
	var out []Use
	for _, m := range webhookEvent.FindAllStringSubmatch(string(b)[start:], -1) {
		if m[2] == "nil" {
			out = append(out, Use{ID: m[1], Via: "every action", Files: []string{file}})
			continue
		}
		for _, a := range strings.Split(m[3], ",") {
			a = strings.Trim(strings.TrimSpace(a), `"`)
			out = append(out, Use{ID: m[1] + "." + a, Files: []string{file}})
		}
	}
	out = append(out, Use{ID: "ping", Via: "answered, not stored", Files: []string{"webhooks/github_handler.go"}})
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// larkCall is a call through the Lark SDK's service clients:
// c.lark.Im.Message.Reply(…), c.lark.Im.MessageReaction.Create(…);
// larkVersioned one through a service's versioned client:
// c.lark.Contact.V3.User.Get(…).
var (
	larkCall      = regexp.MustCompile(`\.lark\.(\w+)\.(\w+)\.(\w+)\(`)
	larkVersioned = regexp.MustCompile(`\.lark\.(\w+)\.V(\d+)\.(\w+)\.(\w+)\(`)
	larkRaw       = regexp.MustCompile(`\.lark\.(Get|Post)\(ctx, "(/open-apis/[^"]+)"`)
)

// feishuUses finds the Open API calls the product makes.
func feishuUses(root string, files []string) ([]Use, error) {
	uses := map[string]*Use{}
	add := func(id, via, file string) {
		u := uses[id]
		if u == nil {
			u = &Use{ID: id, Via: via}
			uses[id] = u
		}
		if !contains(u.Files, file) {
			u.Files = append(u.Files, file)
		}
	}
	lower := func(s string) string { return strings.ToLower(s[:1]) + s[1:] }
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		src := string(b)
		for _, m := range larkCall.FindAllStringSubmatch(src, -1) {
			add(lower(m[1])+".v1."+lower(m[2])+"."+lower(m[3]), "SDK "+m[1]+"."+m[2]+"."+m[3], f)
		}
		for _, m := range larkVersioned.FindAllStringSubmatch(src, -1) {
			add(lower(m[1])+".v"+m[2]+"."+lower(m[3])+"."+lower(m[4]), "SDK "+m[1]+".V"+m[2]+"."+m[3]+"."+m[4], f)
		}
		for _, m := range larkRaw.FindAllStringSubmatch(src, -1) {
			// /open-apis/bot/v3/info → bot.v3.info
			add(strings.ReplaceAll(strings.TrimPrefix(m[2], "/open-apis/"), "/", "."), "raw "+strings.ToUpper(m[1]), f)
		}
		if strings.Contains(src, `lark.NewClient(`) {
			add("auth.v3.auth.tenantAccessTokenInternal", "SDK token manager", f)
		}
	}
	return sorted(uses), nil
}

func sorted(m map[string]*Use) []Use {
	out := make([]Use, 0, len(m))
	for _, u := range m {
		sort.Strings(u.Files)
		out = append(out, *u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
