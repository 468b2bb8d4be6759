package workspace

import (
	"encoding/base64"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// gitServer serves bare repositories over smart HTTP with git http-backend,
// the way GitHub does for installation tokens: every request must carry
// "Authorization: Basic base64(x-access-token:<token>)".
type gitServer struct {
	t     testing.TB
	root  string // GIT_PROJECT_ROOT
	token string
	srv   *httptest.Server

	mu   sync.Mutex
	urls []string // every request URL, to check the token never travels in one
}

func newGitServer(t testing.TB, token string) *gitServer {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	require.NoError(t, err)
	s := &gitServer{t: t, root: t.TempDir(), token: token}
	backend := &cgi.Handler{
		Path: gitPath,
		Args: []string{"http-backend"},
		Root: "/git",
		Env: []string{
			"GIT_PROJECT_ROOT=" + s.root,
			"GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=/dev/null",
			"HOME=" + s.root,
		},
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.urls = append(s.urls, r.URL.String())
		s.mu.Unlock()
		if r.Header.Get("Authorization") != want {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if !strings.HasPrefix(r.URL.Path, "/git/") {
			http.NotFound(w, r)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// newRepo creates the bare repository owner/name with one commit on main
// holding files, and returns its clone URL and bare directory.
func (s *gitServer) newRepo(owner, name string, files map[string]string) (url, bare string) {
	s.t.Helper()
	bare = filepath.Join(s.root, owner, name+".git")
	hostGit(s.t, "", "init", "--quiet", "--bare", "--initial-branch=main", bare)
	hostGit(s.t, bare, "config", "http.receivepack", "true")
	seed := s.t.TempDir()
	hostGit(s.t, seed, "init", "--quiet", "--initial-branch=main")
	for p, text := range files {
		require.NoError(s.t, os.MkdirAll(filepath.Dir(filepath.Join(seed, p)), 0o755))
		require.NoError(s.t, os.WriteFile(filepath.Join(seed, p), []byte(text), 0o644))
	}
	hostGit(s.t, seed, "add", "-A")
	hostGit(s.t, seed, "commit", "--quiet", "-m", "initial")
	hostGit(s.t, seed, "push", "--quiet", bare, "main")
	return s.srv.URL + "/git/" + owner + "/" + name + ".git", bare
}

func (s *gitServer) requestURLs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.urls...)
}

// hostGit runs git for test setup and checks, with a fixed identity.
func hostGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=Seed", "GIT_AUTHOR_EMAIL=seed@example.com",
		"GIT_COMMITTER_NAME=Seed", "GIT_COMMITTER_EMAIL=seed@example.com",
	)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}
