package workspace

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Remote is where a repository is fetched from and pushed to.
type Remote struct {
	// URL is the clone URL without credentials, e.g. https://github.com/o/r.git.
	URL string
	// Token is the installation access token. It reaches git only through the
	// environment, as an http.extraHeader.
	Token string
	// BaseBranch is the repository's default branch, e.g. "main".
	BaseBranch string
}

func (r Remote) validate() error {
	var errs []error
	u, err := url.Parse(r.URL)
	switch {
	case r.URL == "":
		errs = append(errs, errors.New("remote URL is empty"))
	case err != nil:
		errs = append(errs, errors.New("remote URL does not parse"))
	case u.User != nil:
		// Do not echo the URL: it carries credentials.
		errs = append(errs, errors.New("remote URL must not carry credentials"))
	case u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "file":
		errs = append(errs, fmt.Errorf("remote URL scheme %q is not http, https or file", u.Scheme))
	}
	if r.Token != "" && strings.ContainsAny(r.Token, "\r\n") {
		errs = append(errs, errors.New("remote token contains a line break"))
	}
	if err := checkBranchName(r.BaseBranch); err != nil {
		errs = append(errs, fmt.Errorf("base branch: %w", err))
	}
	return errors.Join(errs...)
}

// authEnv returns the environment that makes git send the token, or nil.
func (r Remote) authEnv() []string {
	if r.Token == "" {
		return nil
	}
	return []string{
		"GIT_CONFIG_COUNT=1",
		"GIT_CONFIG_KEY_0=http.extraHeader",
		"GIT_CONFIG_VALUE_0=" + r.authHeader(),
	}
}

func (r Remote) authHeader() string {
	return "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+r.Token))
}

// scrub removes every form of the token from s.
func (r Remote) scrub(s string) string {
	if r.Token == "" {
		return s
	}
	enc := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + r.Token))
	s = strings.ReplaceAll(s, enc, "[redacted]")
	s = strings.ReplaceAll(s, r.Token, "[redacted]")
	return s
}

// checkBranchName refuses names git would refuse and names that could be
// taken for an option.
func checkBranchName(name string) error {
	if name == "" {
		return errors.New("branch name is empty")
	}
	if strings.HasPrefix(name, "-") || strings.ContainsAny(name, " ~^:?*[\\\x7f") || strings.Contains(name, "..") ||
		strings.Contains(name, "@{") || strings.HasSuffix(name, ".lock") || strings.HasSuffix(name, "/") ||
		strings.HasSuffix(name, ".") || strings.HasPrefix(name, "/") || strings.Contains(name, "//") || name == "HEAD" {
		return fmt.Errorf("invalid branch name %q", name)
	}
	for _, c := range name {
		if c < 0x20 {
			return fmt.Errorf("invalid branch name %q", name)
		}
	}
	return nil
}

// gitRunner runs the host's git with settings that keep anything written into
// the worktree from making the host run code.
type gitRunner struct {
	path string
	home string // empty private directory used as HOME
}

// safeConfig is passed as -c options. Child git processes inherit these through
// GIT_CONFIG_PARAMETERS, and they override repository config.
var safeConfig = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "core.sshCommand=false",
	"-c", "credential.helper=",
	"-c", "http.followRedirects=false",
	"-c", "protocol.ext.allow=never",
	"-c", "safe.bareRepository=explicit",
	"-c", "diff.ignoreSubmodules=all",
	"-c", "diff.external=",
	"-c", "core.pager=cat",
	"-c", "commit.gpgSign=false",
	"-c", "tag.gpgSign=false",
	"-c", "gc.auto=0",
	"-c", "maintenance.auto=false",
}

type gitCmd struct {
	dir    string
	args   []string
	env    []string // extra environment
	stdin  io.Reader
	remote Remote // for scrubbing
	stdout io.Writer
}

func (g gitRunner) env(extra []string) []string {
	env := []string{
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"HOME=" + g.home,
		"XDG_CONFIG_HOME=" + g.home,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=",
		"SSH_ASKPASS=",
		"GIT_LITERAL_PATHSPECS=1",
		"GIT_OPTIONAL_LOCKS=0",
		"LANG=C",
		"LC_ALL=C",
	}
	// git finds its helpers (git-remote-https) through its exec path, but
	// some setups rely on PATH.
	if p := os.Getenv("PATH"); p != "" {
		env = append(env, "PATH="+p)
	} else {
		env = append(env, "PATH=/usr/local/bin:/usr/bin:/bin")
	}
	return append(env, extra...)
}

// run runs git and returns its stdout. The error carries stderr, scrubbed.
func (g gitRunner) run(ctx context.Context, c gitCmd) (string, error) {
	args := append([]string{}, safeConfig...)
	// When the service is root the work tree belongs to the sandbox user,
	// and git refuses a repository it does not own. Name this one only: a
	// nested repository the sandbox made stays refused.
	if c.dir != "" {
		args = append(args, "-c", "safe.directory="+c.dir)
		if real, err := filepath.EvalSymlinks(c.dir); err == nil && real != c.dir {
			args = append(args, "-c", "safe.directory="+real)
		}
	}
	args = append(args, c.args...)
	cmd := exec.CommandContext(ctx, g.path, args...)
	cmd.Dir = c.dir
	cmd.Env = g.env(c.env)
	cmd.Stdin = c.stdin
	var stdout, stderr bytes.Buffer
	kept := &limitedBuffer{buf: &stdout, max: maxGitStdout}
	cmd.Stdout = kept
	if c.stdout != nil {
		cmd.Stdout = c.stdout
	}
	cmd.Stderr = &limitedBuffer{buf: &stderr, max: 64 << 10}
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(c.remote.scrub(stderr.String()))
		if ctx.Err() != nil {
			return "", fmt.Errorf("git %s: %w", c.args[0], ctx.Err())
		}
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return "", &GitError{Command: c.args[0], ExitCode: exitErr.ExitCode(), Stderr: msg}
		}
		return "", fmt.Errorf("running git %s: %w", c.args[0], err)
	}
	if kept.dropped > 0 {
		// A cut answer (a list of files, say) would be wrong, not short.
		return "", fmt.Errorf("git %s: output over %s (%s in all); the service keeps no more", c.args[0],
			formatBytes(maxGitStdout), formatBytes(int64(stdout.Len())+kept.dropped))
	}
	return stdout.String(), nil
}

// maxGitStdout is the most of a git command's output the host keeps when
// it reads the output whole (refs, lists of files); output shown to the
// model streams through the output cap instead.
const maxGitStdout = 8 << 20

// GitError reports a git command that exited non-zero. Stderr never contains
// the token.
type GitError struct {
	Command  string
	ExitCode int
	Stderr   string
}

func (e *GitError) Error() string {
	if e.Stderr == "" {
		return fmt.Sprintf("git %s exited with status %d", e.Command, e.ExitCode)
	}
	return fmt.Sprintf("git %s exited with status %d: %s", e.Command, e.ExitCode, e.Stderr)
}

// limitedBuffer keeps the first max bytes written and counts the rest it
// discards, still taking them, so the writer is never blocked.
type limitedBuffer struct {
	buf     *bytes.Buffer
	max     int
	dropped int64
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	n := 0
	if room := l.max - l.buf.Len(); room > 0 {
		n = min(room, len(p))
		l.buf.Write(p[:n])
	}
	l.dropped += int64(len(p) - n)
	return len(p), nil
}
