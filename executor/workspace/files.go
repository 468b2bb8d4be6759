package workspace

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"
)

const (
	defaultReadLines  = 2000
	maxLineChars      = 2000
	defaultMaxResults = 100
	maxSearchFile     = 4 << 20
	binarySniffBytes  = 8000
)

// relPath turns a path given by the model into a clean slash-separated path
// relative to the workspace root, or refuses it. Absolute paths are accepted
// when they name something inside the workspace, either as the sandbox sees it
// (/workspace/...) or as the host does.
func (w *Workspace) relPath(p string) (string, error) {
	if p == "" {
		return ".", nil
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("path %q contains a NUL byte", p)
	}
	if filepath.IsAbs(p) {
		p = filepath.Clean(p)
		var rel string
		switch {
		case p == sandboxWorkspace || p == w.dir:
			return ".", nil
		case strings.HasPrefix(p, sandboxWorkspace+"/"):
			rel = strings.TrimPrefix(p, sandboxWorkspace+"/")
		case strings.HasPrefix(p, w.dir+"/"):
			rel = strings.TrimPrefix(p, w.dir+"/")
		default:
			return "", fmt.Errorf("path %q is outside the workspace", p)
		}
		p = rel
	}
	p = path.Clean(filepath.ToSlash(p))
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", fmt.Errorf("path %q is outside the workspace", p)
	}
	return p, nil
}

// writablePath is relPath for writes: .git is off limits, and so is any path
// through a symlink, which could lead into .git.
func (w *Workspace) writablePath(root *os.Root, p string) (string, error) {
	rel, err := w.relPath(p)
	if err != nil {
		return "", err
	}
	if rel == "." {
		return "", fmt.Errorf("path %q is the workspace itself, not a file", p)
	}
	parts := strings.Split(rel, "/")
	if strings.EqualFold(parts[0], ".git") {
		return "", fmt.Errorf("path %q is inside .git, which is off limits", p)
	}
	for i := range parts {
		prefix := strings.Join(parts[:i+1], "/")
		fi, err := root.Lstat(prefix)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("checking %q: %w", prefix, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", fmt.Errorf("path %q goes through the symlink %q; write to its target instead", p, prefix)
		}
		if i < len(parts)-1 && !fi.IsDir() {
			return "", fmt.Errorf("path %q: %q is not a directory", p, prefix)
		}
	}
	return rel, nil
}

func (w *Workspace) openRoot() (*os.Root, error) {
	root, err := os.OpenRoot(w.dir)
	if err != nil {
		return nil, fmt.Errorf("opening workspace of ticket %d: %w", w.id, err)
	}
	return root, nil
}

// ReadFile returns limit lines of path starting at line offset (1-based; 0
// means from the start; limit 0 means 2000), each prefixed with its number.
// Binary files are refused.
func (w *Workspace) ReadFile(p string, offset, limit int) (string, error) {
	if offset < 0 || limit < 0 {
		return "", fmt.Errorf("reading %q: offset and limit must not be negative", p)
	}
	if offset == 0 {
		offset = 1
	}
	if limit == 0 {
		limit = defaultReadLines
	}
	rel, err := w.relPath(p)
	if err != nil {
		return "", fmt.Errorf("reading %q: %w", p, err)
	}
	root, err := w.openRoot()
	if err != nil {
		return "", err
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		return "", fmt.Errorf("reading %q: %w", p, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return "", fmt.Errorf("reading %q: %w", p, err)
	} else if fi.IsDir() {
		return "", fmt.Errorf("reading %q: is a directory; list it with a command", p)
	}
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(binarySniffBytes)
	if isBinary(head) {
		return "", fmt.Errorf("reading %q: binary file; inspect it with a command instead", p)
	}
	var out strings.Builder
	n := 0
	more := false
	for {
		line, err := br.ReadString('\n')
		if line == "" && err != nil {
			if !errors.Is(err, io.EOF) {
				return "", fmt.Errorf("reading %q: %w", p, err)
			}
			break
		}
		n++
		if n >= offset+limit {
			more = true
			break
		}
		if n < offset {
			continue
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if len(line) > maxLineChars {
			line = strings.ToValidUTF8(line[:maxLineChars], "") + fmt.Sprintf(" [line cut: %d more bytes]", len(line)-maxLineChars)
		}
		fmt.Fprintf(&out, "%6d\t%s\n", n, line)
	}
	switch {
	case n < offset && n > 0:
		return "", fmt.Errorf("reading %q: offset %d is past the end (%d lines)", p, offset, n)
	case more:
		fmt.Fprintf(&out, "[more lines follow; read on from offset %d]\n", offset+limit)
	}
	return out.String(), nil
}

// readSearchable returns the contents of name if it is a text file small
// enough to search.
func readSearchable(fsys fs.FS, name string) ([]byte, bool) {
	fi, err := fs.Stat(fsys, name)
	if err != nil || fi.Size() > maxSearchFile {
		return nil, false
	}
	data, err := fs.ReadFile(fsys, name)
	if err != nil || isBinary(data[:min(len(data), binarySniffBytes)]) {
		return nil, false
	}
	return data, true
}

func isBinary(b []byte) bool {
	if bytes.IndexByte(b, 0) >= 0 {
		return true
	}
	// A multi-byte character may be cut at the end of the sample.
	for i := 0; i < 3 && len(b) > 0 && !utf8.Valid(b); i++ {
		b = b[:len(b)-1]
	}
	return !utf8.Valid(b)
}

// WriteFile writes content to path, creating parent directories.
func (w *Workspace) WriteFile(p, content string) error {
	root, err := w.openRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	rel, err := w.writablePath(root, p)
	if err != nil {
		return fmt.Errorf("writing %q: %w", p, err)
	}
	mode := fs.FileMode(0o644)
	if fi, err := root.Lstat(rel); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("writing %q: is a directory", p)
		}
		mode = fi.Mode().Perm()
	}
	if dir := path.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("writing %q: creating parent directories: %w", p, err)
		}
	}
	if err := root.WriteFile(rel, []byte(content), mode); err != nil {
		return fmt.Errorf("writing %q: %w", p, err)
	}
	return nil
}

// EditFile replaces oldText with newText in path. oldText must occur exactly
// once unless all is set, in which case every occurrence is replaced. It returns how many
// were replaced.
func (w *Workspace) EditFile(p, oldText, newText string, all bool) (replaced int, err error) {
	if oldText == "" {
		return 0, fmt.Errorf("editing %q: the text to replace is empty", p)
	}
	if oldText == newText {
		return 0, fmt.Errorf("editing %q: the replacement is the same as the text to replace", p)
	}
	root, err := w.openRoot()
	if err != nil {
		return 0, err
	}
	defer root.Close()
	rel, err := w.writablePath(root, p)
	if err != nil {
		return 0, fmt.Errorf("editing %q: %w", p, err)
	}
	fi, err := root.Lstat(rel)
	if err != nil {
		return 0, fmt.Errorf("editing %q: %w", p, err)
	}
	data, err := root.ReadFile(rel)
	if err != nil {
		return 0, fmt.Errorf("editing %q: %w", p, err)
	}
	text := string(data)
	n := strings.Count(text, oldText)
	switch {
	case n == 0:
		return 0, fmt.Errorf("editing %q: the text to replace was not found (it must match exactly, whitespace included)", p)
	case n > 1 && !all:
		return 0, fmt.Errorf("editing %q: the text to replace occurs %d times; add context to make it unique, or replace all", p, n)
	}
	if err := root.WriteFile(rel, []byte(strings.ReplaceAll(text, oldText, newText)), fi.Mode().Perm()); err != nil {
		return 0, fmt.Errorf("editing %q: %w", p, err)
	}
	return n, nil
}

// Search returns the lines of text files under path matching the RE2 pattern,
// as "file:line: text", at most maxResults of them (0 means 100). .git,
// symlinks and binary files are skipped.
func (w *Workspace) Search(ctx context.Context, pattern, p string, maxResults int) (string, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return "", fmt.Errorf("searching: bad pattern: %w", err)
	}
	if maxResults <= 0 {
		maxResults = defaultMaxResults
	}
	rel, err := w.relPath(p)
	if err != nil {
		return "", fmt.Errorf("searching %q: %w", p, err)
	}
	root, err := w.openRoot()
	if err != nil {
		return "", err
	}
	defer root.Close()
	fsys := root.FS()
	var out strings.Builder
	results := 0
	capped := false
	err = fs.WalkDir(fsys, rel, func(name string, d fs.DirEntry, walkErr error) error {
		switch {
		case walkErr != nil && name == rel:
			return walkErr
		case walkErr != nil:
			return nil // unreadable entries are skipped
		case ctx.Err() != nil:
			return ctx.Err()
		case d.IsDir() && d.Name() == ".git":
			return fs.SkipDir
		case !d.Type().IsRegular():
			return nil // directories, and symlinks, which could lead out
		}
		data, ok := readSearchable(fsys, name)
		if !ok {
			return nil
		}
		line := 0
		for text := range strings.Lines(string(data)) {
			line++
			text = strings.TrimRight(text, "\r\n")
			if !re.MatchString(text) {
				continue
			}
			if results == maxResults {
				capped = true
				return fs.SkipAll
			}
			results++
			if len(text) > 500 {
				text = strings.ToValidUTF8(text[:500], "") + " [...]"
			}
			fmt.Fprintf(&out, "%s:%d: %s\n", name, line, text)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("searching %q: %w", p, err)
	}
	switch {
	case capped:
		fmt.Fprintf(&out, "[results capped at %d; narrow the pattern or the path]\n", maxResults)
	case results == 0:
		out.WriteString("no matches\n")
	}
	return w.capOutput(out.String()), nil
}
