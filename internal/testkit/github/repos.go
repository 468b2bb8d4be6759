package github

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// FirstNumber is the number of the first issue or pull request the fake
// numbers itself (POST pulls, AddPullRequest). Issues and pull requests of
// a repository share one sequence, which always continues past the highest
// number in use, AddIssue's included; starting at 100 keeps clear of the
// small numbers webhook fixtures use.
const FirstNumber = 100

// BotUserID is the user id of the App's bot account (Slug+"[bot]").
const BotUserID = 41898282 + 1000

// store holds the repository state ServeRepositories serves. Its own lock
// keeps git subprocesses from holding Server.mu, which every request takes.
type store struct {
	mu       sync.Mutex
	served   bool
	root     string // GIT_PROJECT_ROOT: <root>/<owner>/<repo>.git
	repos    map[string]*repo
	checks   map[int64]*checkRun
	runs     map[int64]*workflowRun
	nextID   int64 // ids of repositories, reviews, review comments, check runs
	nextNode int   // review thread node ids
}

func newStore() *store {
	return &store{repos: map[string]*repo{}, checks: map[int64]*checkRun{}, nextID: 20000}
}

func (st *store) id() int64 {
	st.nextID++
	return st.nextID
}

type repo struct {
	id            int64
	fullName      string
	defaultBranch string
	dir           string // bare repository; empty for AddIssue-only repositories
	issues        map[int]*issue
	pulls         map[int]*pull
	reviews       []*review
	comments      []*reviewComment
	threads       []*thread
}

func (r *repo) nextNumber() int {
	n := FirstNumber
	for k := range r.issues {
		n = max(n, k+1)
	}
	for k := range r.pulls {
		n = max(n, k+1)
	}
	return n
}

// ServeRepositories adds the routes for repositories, git smart HTTP,
// pull requests, issues, reviews, check runs, users and GraphQL, and
// ServeConversations. AddRepo and AddIssue call it; until something does,
// tests may Handle these routes themselves. Calling it again does nothing.
//
// Routes (all but the job log download need an installation token):
//
//	GET   /repos/{owner}/{repo}
//	GET   /git/{owner}/{repo}.git/...  (Basic x-access-token:<token>)
//	POST  /repos/{owner}/{repo}/pulls
//	GET   /repos/{owner}/{repo}/pulls                 (state, head)
//	GET   /repos/{owner}/{repo}/pulls/{number}
//	PATCH /repos/{owner}/{repo}/pulls/{number}
//	PUT   /repos/{owner}/{repo}/pulls/{number}/merge
//	GET   /repos/{owner}/{repo}/pulls/{number}/files
//	GET   /repos/{owner}/{repo}/pulls/{number}/comments
//	POST  /repos/{owner}/{repo}/pulls/{number}/comments  ({body, path, line} or {body, in_reply_to})
//	POST  /repos/{owner}/{repo}/pulls/{number}/comments/{id}/replies
//	GET   /repos/{owner}/{repo}/pulls/{number}/reviews
//	POST  /repos/{owner}/{repo}/pulls/{number}/reviews  (body, event, comments[{path, line, body}])
//	GET   /repos/{owner}/{repo}/issues/{number}
//	GET   /repos/{owner}/{repo}/issues/{number}/comments
//	PATCH /repos/{owner}/{repo}/issues/comments/{id}
//	GET   /repos/{owner}/{repo}/commits/{ref}/check-runs  (ref: sha or branch)
//	GET   /repos/{owner}/{repo}/commits/{ref}/status
//	GET   /repos/{owner}/{repo}/actions/jobs/{id}/logs  (302 to the log)
//	GET   /users/{login}
//	POST  /graphql  (see graphql.go)
//
// ServeConversations' routes (posting issue comments, reactions) come
// along. The job log download, GET /_fake/job-logs/{id}, needs no token,
// like GitHub's pre-signed log URLs.
func (s *Server) ServeRepositories() {
	s.ServeConversations()
	s.st.mu.Lock()
	served := s.st.served
	s.st.served = true
	s.st.mu.Unlock()
	if served {
		return
	}
	s.mux.HandleFunc("GET /repos/{owner}/{repo}", s.getRepo)
	s.mux.HandleFunc("/git/", s.serveGit)
	s.servePulls()
	s.serveIssues()
	s.serveReviews()
	s.serveChecks()
	s.serveActions()
	s.mux.HandleFunc("GET /users/{login}", s.getUser)
	s.mux.HandleFunc("POST /graphql", s.graphql)
}

// AddRepo creates a bare git repository fullName ("owner/name") seeded with
// one commit of files on defaultBranch, serves it (ServeRepositories) and
// returns its path, for tests to inspect with git --git-dir.
func (s *Server) AddRepo(t testing.TB, fullName, defaultBranch string, files map[string]string) string {
	t.Helper()
	s.ServeRepositories()
	owner, name, ok := strings.Cut(fullName, "/")
	if !ok || owner == "" || name == "" {
		t.Fatalf("fake GitHub: repository %q is not owner/name", fullName)
	}
	s.st.mu.Lock()
	if s.st.root == "" {
		s.st.root = t.TempDir()
		// Cleanups run last-registered first: close the server (which
		// waits for the git requests in flight) before the repositories
		// are removed, or a late push still writes objects into a
		// directory being deleted. Closing twice is harmless.
		t.Cleanup(s.srv.Close)
	}
	dir := filepath.Join(s.st.root, owner, name+".git")
	r := s.st.repos[strings.ToLower(fullName)]
	s.st.mu.Unlock()
	if r != nil && r.dir != "" {
		t.Fatalf("fake GitHub: repository %s added twice", fullName)
	}
	for _, args := range [][]string{
		{"init", "--bare", "--quiet", "--initial-branch=" + defaultBranch, dir},
		{"--git-dir", dir, "config", "http.receivepack", "true"},
	} {
		if _, err := runGit("", nil, args...); err != nil {
			t.Fatalf("fake GitHub: creating %s: %v", fullName, err)
		}
	}
	if _, err := commitFiles(dir, defaultBranch, files, "Initial commit", "Seed", "seed@example.com"); err != nil {
		t.Fatalf("fake GitHub: seeding %s: %v", fullName, err)
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	r = s.st.repo(fullName)
	r.defaultBranch, r.dir = defaultBranch, dir
	return dir
}

// repo returns fullName's record, creating one without a git repository;
// st.mu must be held.
func (st *store) repo(fullName string) *repo {
	k := strings.ToLower(fullName)
	r := st.repos[k]
	if r == nil {
		r = &repo{id: st.id(), fullName: fullName, defaultBranch: "main", issues: map[int]*issue{}, pulls: map[int]*pull{}}
		st.repos[k] = r
	}
	return r
}

// lookup returns the repository named by r's owner and repo path values.
func (st *store) lookup(r *http.Request) *repo {
	return st.repos[strings.ToLower(r.PathValue("owner")+"/"+r.PathValue("repo"))]
}

// Branch returns the commit branch of fullName points to.
func (s *Server) Branch(t testing.TB, fullName, branch string) (sha string, ok bool) {
	t.Helper()
	dir := s.repoDir(t, fullName)
	sha, err := resolve(dir, branch)
	return sha, err == nil
}

// PushAs commits files (path → content, added or replaced) on branch of
// fullName as a person ("Person <person@example.com>") would push it,
// creating the branch from the default branch if absent, and returns the
// commit.
func (s *Server) PushAs(t testing.TB, fullName, branch string, files map[string]string, message string) string {
	t.Helper()
	dir := s.repoDir(t, fullName)
	if _, err := resolve(dir, branch); err != nil {
		s.st.mu.Lock()
		base := s.st.repo(fullName).defaultBranch
		s.st.mu.Unlock()
		if _, err := runGit("", nil, "--git-dir", dir, "branch", branch, base); err != nil {
			t.Fatalf("fake GitHub: creating branch %s of %s: %v", branch, fullName, err)
		}
	}
	sha, err := commitFiles(dir, branch, files, message, "Person", "person@example.com")
	if err != nil {
		t.Fatalf("fake GitHub: pushing to %s of %s: %v", branch, fullName, err)
	}
	return sha
}

func (s *Server) repoDir(t testing.TB, fullName string) string {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	r := s.st.repos[strings.ToLower(fullName)]
	if r == nil || r.dir == "" {
		t.Fatalf("fake GitHub: no repository %s (AddRepo)", fullName)
	}
	return r.dir
}

// repoJSON is r as GET /repos/{owner}/{repo} answers it (full-repository),
// from the published example; nested in other objects it is the same.
func (s *Server) repoJSON(r *repo) map[string]any {
	owner, name, _ := strings.Cut(r.fullName, "/")
	m := s.canned("full-repository-default-response")
	rebase(m, s.repoReplacer(r.fullName))
	// Not a fork, not from a template, not in the example's organization.
	delete(m, "parent")
	delete(m, "source")
	org := s.orgJSON(owner, 1)
	return overlay(m, map[string]any{
		"id": r.id, "node_id": "R_" + strconv.FormatInt(r.id, 10), "name": name, "full_name": r.fullName,
		"owner":               org,
		"organization":        org,
		"private":             true,
		"visibility":          "private",
		"fork":                false,
		"default_branch":      r.defaultBranch,
		"description":         nil,
		"homepage":            nil,
		"mirror_url":          nil,
		"license":             nil,
		"language":            nil, // required by the schema, absent from the example
		"topics":              []any{},
		"template_repository": nil,
		"html_url":            "https://github.com/" + r.fullName,
		"url":                 s.URL + "/repos/" + r.fullName,
		"clone_url":           s.URL + "/git/" + r.fullName + ".git",
		"permissions":         map[string]bool{"admin": false, "maintain": false, "push": true, "triage": true, "pull": true},
	})
}

func (s *Server) getRepo(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.Authorize(w, r); !ok {
		return
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	rp := s.st.lookup(r)
	if rp == nil {
		WriteError(w, http.StatusNotFound, "Not Found")
		return
	}
	WriteJSON(w, http.StatusOK, s.repoJSON(rp))
}

// serveGit runs git http-backend for /git/{owner}/{repo}.git/..., which
// git clients reach with Basic credentials x-access-token:<token>.
func (s *Server) serveGit(w http.ResponseWriter, r *http.Request) {
	user, pass, ok := r.BasicAuth()
	s.mu.Lock()
	_, known := s.tokens[pass]
	scope := s.scopes[pass]
	contents := s.tokenPerms[pass]["contents"]
	s.mu.Unlock()
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/git/"), "/", 3) // owner, repo.git, rest
	if len(parts) < 2 {
		http.Error(w, "Repository not found.", http.StatusNotFound)
		return
	}
	fullName := parts[0] + "/" + strings.TrimSuffix(parts[1], ".git")
	pushing := strings.HasSuffix(r.URL.Path, "/git-receive-pack") || r.URL.Query().Get("service") == "git-receive-pack"
	// A person's fork: public to read; the App pushes only where a pull
	// request's author allows edits by maintainers (forkPush).
	var refs []string
	if strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
		raw, _ := io.ReadAll(r.Body)
		r.Body = readCloser{bytes.NewReader(raw)}
		refs = pushedRefs(raw)
	}
	fork, forkAllowed := s.forkPush(fullName, scope, refs)
	if scope != nil && !fork && !scope[strings.ToLower(strings.TrimSuffix(parts[1], ".git"))] {
		http.Error(w, "Repository not found.", http.StatusNotFound)
		return
	}
	if fork && pushing && !forkAllowed {
		http.Error(w, "Permission to "+fullName+".git denied to superagent[bot].", http.StatusForbidden)
		return
	}
	if !ok || user != "x-access-token" || !known {
		w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
		http.Error(w, "Invalid username or token.", http.StatusUnauthorized)
		return
	}
	// Pushing needs contents: write, as on GitHub, which answers 403.
	if (strings.HasSuffix(r.URL.Path, "/git-receive-pack") || r.URL.Query().Get("service") == "git-receive-pack") && contents != "write" {
		http.Error(w, "Permission to "+parts[0]+"/"+parts[1]+" denied to superagent[bot].", http.StatusForbidden)
		return
	}
	s.st.mu.Lock()
	root := s.st.root
	s.st.mu.Unlock()
	gitPath, err := exec.LookPath("git")
	if err != nil || root == "" {
		http.Error(w, "Repository not found.", http.StatusNotFound)
		return
	}
	// serve buffered the body; a known length spares http-backend a
	// chunked request.
	var body bytes.Buffer
	_, _ = body.ReadFrom(r.Body)
	r.Body = readCloser{bytes.NewReader(body.Bytes())}
	r.ContentLength = int64(body.Len())
	r.TransferEncoding = nil
	h := &cgi.Handler{
		Path: gitPath,
		Args: []string{"http-backend"},
		Root: "/git",
		Env: []string{
			"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=x-access-token",
			"GIT_CONFIG_NOSYSTEM=1", "HOME=" + root,
			// GitHub takes pushes to any ref under refs/ (a hidden
			// refs/superagent/wip/N included) except refs/pull/, which
			// it owns and refuses as a hidden ref.
			"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=receive.hideRefs", "GIT_CONFIG_VALUE_0=refs/pull/",
		},
	}
	h.ServeHTTP(w, r)
	if fork && strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
		s.mirrorFork(fullName)
	}
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// BasicAuth returns the Authorization header value a git client sends for
// token, e.g. git -c http.extraHeader="Authorization: "+BasicAuth(token).
func BasicAuth(token string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))
}

// gitTimeout bounds one git command, so a stuck git fails the test instead
// of hanging it.
const gitTimeout = time.Minute

// runGit runs git in dir (or the current directory) with env added.
func runGit(dir string, env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_TERMINAL_PROMPT=0"), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// resolve returns the commit ref (a branch or a commit) names in dir.
func resolve(dir, ref string) (string, error) {
	if len(ref) != 40 || strings.Trim(ref, "0123456789abcdef") != "" {
		ref = "refs/heads/" + ref
	}
	return runGit("", nil, "--git-dir", dir, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
}

// commitFiles commits files on top of branch (which may not exist yet)
// without a worktree, through a temporary index, and moves branch to it.
func commitFiles(dir, branch string, files map[string]string, message, name, email string) (string, error) {
	index, err := os.CreateTemp("", "fakegithub-index-*")
	if err != nil {
		return "", fmt.Errorf("creating index: %w", err)
	}
	_ = index.Close()
	_ = os.Remove(index.Name()) // git wants to create it
	defer os.Remove(index.Name())
	now := strconv.FormatInt(time.Now().Unix(), 10) + " +0000"
	env := []string{
		"GIT_INDEX_FILE=" + index.Name(),
		"GIT_AUTHOR_NAME=" + name, "GIT_AUTHOR_EMAIL=" + email, "GIT_AUTHOR_DATE=" + now,
		"GIT_COMMITTER_NAME=" + name, "GIT_COMMITTER_EMAIL=" + email, "GIT_COMMITTER_DATE=" + now,
	}
	git := func(args ...string) (string, error) {
		return runGit("", env, append([]string{"--git-dir", dir}, args...)...)
	}
	parent, perr := resolve(dir, branch)
	if perr == nil {
		if _, err := git("read-tree", parent); err != nil {
			return "", err
		}
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		f, err := os.CreateTemp("", "fakegithub-blob-*")
		if err != nil {
			return "", fmt.Errorf("writing %s: %w", p, err)
		}
		_, _ = f.WriteString(files[p])
		_ = f.Close()
		blob, err := git("hash-object", "-w", f.Name())
		_ = os.Remove(f.Name())
		if err != nil {
			return "", err
		}
		if _, err := git("update-index", "--add", "--cacheinfo", "100644,"+blob+","+p); err != nil {
			return "", err
		}
	}
	tree, err := git("write-tree")
	if err != nil {
		return "", err
	}
	args := []string{"commit-tree", tree, "-m", message}
	if perr == nil {
		args = append(args, "-p", parent)
	}
	sha, err := git(args...)
	if err != nil {
		return "", err
	}
	if _, err := git("update-ref", "refs/heads/"+branch, sha); err != nil {
		return "", err
	}
	return sha, nil
}
