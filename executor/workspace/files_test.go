package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// fileWorkspace is a workspace with no remote, for the file tools: a git
// repository beside a secret.
func fileWorkspace(t *testing.T) (*Workspace, string) {
	t.Helper()
	data := t.TempDir()
	secret := filepath.Join(data, "admin-token")
	require.NoError(t, os.WriteFile(secret, []byte("ADMIN-SECRET-TOKEN\n"), 0o600))
	m, err := NewManager(Config{Root: filepath.Join(data, "workspaces"), Sandbox: SandboxNone})
	require.NoError(t, err)
	dir := filepath.Join(data, "workspaces", "ticket-1")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	hostGit(t, dir, "init", "--quiet")
	files := map[string]string{
		"a.txt":          "one\ntwo\nthree\n",
		"dir/b.go":       "package dir\n\nfunc Two() int { return 2 }\n",
		"dir/deep/c.go":  "package deep // two\n",
		"bin.dat":        "\x00\x01\x02two",
		"crlf.txt":       "x\r\ny\r\n",
		"dup.txt":        "foo foo foo\n",
		"empty.txt":      "",
		".git/info/junk": "two\n",
	}
	for p, text := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte(text), 0o644))
	}
	require.NoError(t, os.Symlink(secret, filepath.Join(dir, "abs-link")))
	require.NoError(t, os.Symlink("../../admin-token", filepath.Join(dir, "rel-link")))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "etc-link")))
	require.NoError(t, os.Symlink("a.txt", filepath.Join(dir, "in-link")))
	require.NoError(t, os.Symlink(".git", filepath.Join(dir, "git-link")))
	require.NoError(t, os.Symlink("..", filepath.Join(dir, "up-link")))
	w, err := m.Open(1)
	require.NoError(t, err)
	return w, dir
}

func TestReadFile(t *testing.T) {
	w, dir := fileWorkspace(t)
	for _, tc := range []struct {
		name          string
		path          string
		offset, limit int
		want          string
		wantErr       string
	}{
		{name: "Whole", path: "a.txt", want: "     1\tone\n     2\ttwo\n     3\tthree\n"},
		{name: "Window", path: "a.txt", offset: 2, limit: 1, want: "     2\ttwo\n[more lines follow; read on from offset 3]\n"},
		{name: "ToEnd", path: "a.txt", offset: 3, limit: 5, want: "     3\tthree\n"},
		{name: "PastEnd", path: "a.txt", offset: 9, wantErr: "past the end"},
		{name: "CRLF", path: "crlf.txt", want: "     1\tx\n     2\ty\n"},
		{name: "Empty", path: "empty.txt", want: ""},
		{name: "SandboxAbsolute", path: "/workspace/dir/deep/c.go", want: "     1\tpackage deep // two\n"},
		{name: "HostAbsolute", path: filepath.Join(dir, "a.txt"), offset: 3, want: "     3\tthree\n"},
		{name: "SymlinkInside", path: "in-link", limit: 1, want: "     1\tone\n[more lines follow; read on from offset 2]\n"},
		{name: "Binary", path: "bin.dat", wantErr: "binary file"},
		{name: "Directory", path: "dir", wantErr: "is a directory"},
		{name: "Missing", path: "nope.txt", wantErr: "no such file"},
		{name: "DotDot", path: "../x", wantErr: "outside the workspace"},
		{name: "DotDotInside", path: "dir/../../admin-token", wantErr: "outside the workspace"},
		{name: "AbsoluteOutside", path: "/etc/passwd", wantErr: "outside the workspace"},
		{name: "SandboxDotDot", path: "/workspace/../etc/passwd", wantErr: "outside the workspace"},
		{name: "SymlinkAbsoluteOut", path: "abs-link", wantErr: "escapes"},
		{name: "SymlinkRelativeOut", path: "rel-link", wantErr: "escapes"},
		{name: "SymlinkEtc", path: "etc-link", wantErr: "escapes"},
		{name: "SymlinkUp", path: "up-link/admin-token", wantErr: "escapes"},
		{name: "NegativeOffset", path: "a.txt", offset: -1, wantErr: "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := w.ReadFile(tc.path, tc.offset, tc.limit)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.NotContains(t, got, "SECRET")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}

	t.Run("LongLineIsCut", func(t *testing.T) {
		require.NoError(t, w.WriteFile("long.txt", strings.Repeat("y", 5000)+"\n"))
		got, err := w.ReadFile("long.txt", 0, 0)
		require.NoError(t, err)
		require.Contains(t, got, "[line cut: 3000 more bytes]")
	})
}

func TestWriteFile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		path    string
		wantErr string
	}{
		{name: "New", path: "new.txt"},
		{name: "Overwrite", path: "a.txt"},
		{name: "CreatesParents", path: "x/y/z.txt"},
		{name: "SandboxAbsolute", path: "/workspace/w.txt"},
		{name: "DotDot", path: "../x", wantErr: "outside the workspace"},
		{name: "AbsoluteOutside", path: "/etc/passwd", wantErr: "outside the workspace"},
		{name: "GitConfig", path: ".git/config", wantErr: "off limits"},
		{name: "GitHook", path: ".git/hooks/pre-commit", wantErr: "off limits"},
		{name: "GitCase", path: ".GIT/config", wantErr: "off limits"},
		{name: "GitDotted", path: "dir/../.git/config", wantErr: "off limits"},
		{name: "ThroughGitLink", path: "git-link/config", wantErr: "symlink"},
		{name: "ThroughUpLink", path: "up-link/admin-token", wantErr: "symlink"},
		{name: "SymlinkOut", path: "abs-link", wantErr: "symlink"},
		{name: "SymlinkInside", path: "in-link", wantErr: "symlink"},
		{name: "Directory", path: "dir", wantErr: "is a directory"},
		{name: "Root", path: ".", wantErr: "workspace itself"},
		{name: "UnderFile", path: "a.txt/x", wantErr: "not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, dir := fileWorkspace(t)
			err := w.WriteFile(tc.path, "written\n")
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				secret, rerr := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(dir)), "admin-token"))
				require.NoError(t, rerr)
				require.Equal(t, "ADMIN-SECRET-TOKEN\n", string(secret))
				require.NoFileExists(t, filepath.Join(dir, ".git", "hooks", "pre-commit"))
				return
			}
			require.NoError(t, err)
			rel, err := w.relPath(tc.path)
			require.NoError(t, err)
			got, err := os.ReadFile(filepath.Join(dir, rel))
			require.NoError(t, err)
			require.Equal(t, "written\n", string(got))
		})
	}
}

func TestEditFile(t *testing.T) {
	for _, tc := range []struct {
		name     string
		path     string
		old, new string
		all      bool
		want     string // a.txt or dup.txt afterwards
		wantN    int
		wantErr  string
	}{
		{name: "Once", path: "a.txt", old: "two", new: "2", want: "one\n2\nthree\n", wantN: 1},
		{name: "Multiline", path: "a.txt", old: "one\ntwo", new: "1-2", want: "1-2\nthree\n", wantN: 1},
		{name: "All", path: "dup.txt", old: "foo", new: "bar", all: true, want: "bar bar bar\n", wantN: 3},
		{name: "Ambiguous", path: "dup.txt", old: "foo", new: "bar", wantErr: "occurs 3 times"},
		{name: "NotFound", path: "a.txt", old: "four", new: "4", wantErr: "not found"},
		{name: "EmptyOld", path: "a.txt", old: "", new: "x", wantErr: "empty"},
		{name: "Same", path: "a.txt", old: "one", new: "one", wantErr: "same"},
		{name: "Missing", path: "nope.txt", old: "a", new: "b", wantErr: "no such file"},
		{name: "Git", path: ".git/info/junk", old: "two", new: "x", wantErr: "off limits"},
		{name: "SymlinkOut", path: "abs-link", old: "ADMIN", new: "x", wantErr: "symlink"},
		{name: "DotDot", path: "../admin-token", old: "ADMIN", new: "x", wantErr: "outside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, dir := fileWorkspace(t)
			n, err := w.EditFile(tc.path, tc.old, tc.new, tc.all)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantN, n)
			got, err := os.ReadFile(filepath.Join(dir, tc.path))
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
		})
	}
}

func TestSearch(t *testing.T) {
	w, _ := fileWorkspace(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		pattern    string
		path       string
		maxResults int
		want       string
		wantErr    string
	}{
		{name: "Everywhere", pattern: "(?i)two", want: "a.txt:2: two\ndir/b.go:3: func Two() int { return 2 }\ndir/deep/c.go:1: package deep // two\n"},
		{name: "UnderPath", pattern: "two", path: "dir", want: "dir/deep/c.go:1: package deep // two\n"},
		{name: "Capped", pattern: "(?i)two", maxResults: 1, want: "a.txt:2: two\n[results capped at 1; narrow the pattern or the path]\n"},
		{name: "NoMatch", pattern: "zzz", want: "no matches\n"},
		{name: "BadPattern", pattern: "(", wantErr: "bad pattern"},
		{name: "DotDot", pattern: "x", path: "..", wantErr: "outside"},
		{name: "Absolute", pattern: "x", path: "/etc", wantErr: "outside"},
		{name: "SymlinkDirOut", pattern: "ADMIN", path: "up-link", wantErr: "escapes"},
		{name: "SkipsSymlinksOut", pattern: "ADMIN|root:", want: "no matches\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := w.Search(ctx, tc.pattern, tc.path, tc.maxResults)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestAgentsChain(t *testing.T) {
	w, dir := fileWorkspace(t)
	for p, text := range map[string]string{
		"AGENTS.md":             "root",
		"dir/AGENTS.md":         "dir",
		"dir/deep/AGENTS.md":    "deep",
		"other/AGENTS.md":       "other",
		"other/inner/AGENTS.md": "inner",
	} {
		require.NoError(t, w.WriteFile(p, text))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "out"), 0o755))
	require.NoError(t, os.Symlink("../../../admin-token", filepath.Join(dir, "out", "AGENTS.md")))
	// A committed link to two levels up: the data directory.
	require.NoError(t, os.Symlink("../../", filepath.Join(dir, "link")))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "pipe"), 0o755))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "pipe", "AGENTS.md"), 0o644))

	paths := func(files []AgentsFile) []string {
		var out []string
		for _, f := range files {
			out = append(out, f.Path+"="+f.Text)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		dirs    []string
		want    []string
		skipped string // what the error on the entries left out says
	}{
		{name: "None", dirs: nil, want: []string{"AGENTS.md=root"}},
		{name: "Root", dirs: []string{"."}, want: []string{"AGENTS.md=root"}},
		{name: "Deep", dirs: []string{"dir/deep"}, want: []string{"AGENTS.md=root", "dir/AGENTS.md=dir", "dir/deep/AGENTS.md=deep"}},
		{name: "SkipsMissingLevels", dirs: []string{"other/x/inner"}, want: []string{"AGENTS.md=root", "other/AGENTS.md=other"}},
		{name: "EachOnce", dirs: []string{"dir/deep", "dir", "other/inner", "dir/deep/"},
			want: []string{"AGENTS.md=root", "dir/AGENTS.md=dir", "dir/deep/AGENTS.md=deep", "other/AGENTS.md=other", "other/inner/AGENTS.md=inner"}},
		{name: "Escape", dirs: []string{"../x"}, want: []string{"AGENTS.md=root"}, skipped: "outside"},
		{name: "SymlinkOut", dirs: []string{"out"}, want: []string{"AGENTS.md=root"}, skipped: "escapes"},
		{name: "DirectoryLinkOut", dirs: []string{"link"}, want: []string{"AGENTS.md=root"}, skipped: "escapes"},
		{name: "BelowDirectoryLinkOut", dirs: []string{"link/workspaces/ticket-1"}, want: []string{"AGENTS.md=root"}, skipped: "escapes"},
		{name: "FIFOIsNoFile", dirs: []string{"pipe"}, want: []string{"AGENTS.md=root"}},
		{name: "BadEntriesCostNothingElse", dirs: []string{"dir", "link", "../x", "out", "other/inner"},
			want:    []string{"AGENTS.md=root", "dir/AGENTS.md=dir", "other/AGENTS.md=other", "other/inner/AGENTS.md=inner"},
			skipped: "escapes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, skipped := w.AgentsChain(tc.dirs)
			if tc.skipped != "" {
				require.ErrorContains(t, skipped, tc.skipped)
			} else {
				require.NoError(t, skipped)
			}
			require.Equal(t, tc.want, paths(got))
			for _, f := range got {
				require.NotContains(t, f.Text, "SECRET")
			}
		})
	}
}

func TestCappedWriter(t *testing.T) {
	for _, tc := range []struct {
		name      string
		max       int
		writes    []string
		want      string
		truncated bool
	}{
		{name: "Fits", max: 10, writes: []string{"abc", "def"}, want: "abcdef"},
		{name: "Exact", max: 6, writes: []string{"abcdef"}, want: "abcdef"},
		{name: "OneBigWrite", max: 6, writes: []string{"abcdefghij"}, want: "abc\n[... output cut at 6 B of 10 B: 4 bytes of output cut; showing the first 3 and the last 3 ...]\nhij", truncated: true},
		{name: "ManySmallWrites", max: 6, writes: []string{"ab", "cd", "ef", "gh", "ij"}, want: "abc\n[... output cut at 6 B of 10 B: 4 bytes of output cut; showing the first 3 and the last 3 ...]\nhij", truncated: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCappedWriter(tc.max)
			for _, s := range tc.writes {
				_, _ = c.Write([]byte(s))
			}
			got, truncated := c.result()
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.truncated, truncated)
		})
	}
}

func TestInsideDir(t *testing.T) {
	w, dir := fileWorkspace(t)
	require.NoError(t, os.Symlink("../../", filepath.Join(dir, "link")))
	require.NoError(t, os.Symlink("dir/deep", filepath.Join(dir, "deep-link")))
	for _, tc := range []struct {
		path, want, wantErr string
	}{
		{path: "", want: "."},
		{path: "dir/deep", want: "dir/deep"},
		{path: "/workspace/dir", want: "dir"},
		{path: filepath.Join(dir, "dir"), want: "dir"},
		{path: "deep-link", want: "deep-link"},
		{path: "link", wantErr: "escapes"},
		{path: "link/workspaces", wantErr: "escapes"},
		{path: "up-link", wantErr: "escapes"},
		{path: "../x", wantErr: "outside"},
		{path: "/etc", wantErr: "outside"},
		{path: "a.txt", wantErr: "not a directory"},
		{path: "nope", wantErr: "no such file"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			got, err := w.InsideDir(tc.path)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
