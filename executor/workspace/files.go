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
	"syscall"
	"unicode/utf8"
)

const (
	defaultReadLines  = 2000
	maxLineChars      = 2000
	defaultMaxResults = 100
	maxSearchFile     = 4 << 20
	maxEditBytes      = 8 << 20
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
// Binary files and anything but a regular file are refused. The file is
// streamed: a line keeps its first 2000 bytes, and the result stops at the
// workspace's output cap, so neither a huge file nor a huge line is ever
// held in memory.
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
	f, _, err := openRegular(root, rel, os.O_RDONLY, 0)
	if err != nil {
		return "", fmt.Errorf("reading %q: %w", p, err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(binarySniffBytes)
	if isBinary(head) {
		return "", fmt.Errorf("reading %q: binary file; inspect it with a command instead", p)
	}
	maxOut := w.m.cfg.MaxOutputBytes
	var out strings.Builder
	var buf []byte
	n := 0
	more, full := false, false
	for {
		keep := maxLineChars
		if n+1 < offset {
			keep = 0 // a line before the window is only counted
		}
		var length int64
		var ok bool
		buf, length, ok, err = nextLine(br, keep, buf)
		if err != nil {
			return "", fmt.Errorf("reading %q: %w", p, err)
		}
		if !ok {
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
		line := fmt.Sprintf("%6d\t%s\n", n, strings.ToValidUTF8(string(buf), ""))
		if length > int64(len(buf)) {
			line = fmt.Sprintf("%6d\t%s [line cut: %d more bytes]\n", n, strings.ToValidUTF8(string(buf), ""), length-int64(len(buf)))
		}
		if out.Len()+len(line) > maxOut && out.Len() > 0 {
			full = true
			break
		}
		out.WriteString(line)
	}
	switch {
	case n < offset && n > 0:
		return "", fmt.Errorf("reading %q: offset %d is past the end (%d lines)", p, offset, n)
	case full:
		fmt.Fprintf(&out, "[output cut at %s; read on from offset %d]\n", formatBytes(int64(maxOut)), n)
	case more:
		fmt.Fprintf(&out, "[more lines follow; read on from offset %d]\n", offset+limit)
	}
	return out.String(), nil
}

// nextLine reads the next line from br into buf, keeping at most keep bytes
// of it without the line break, and returns the line's whole length (line
// break excluded). The reader's buffer is the only other memory it needs,
// however long the line. ok is false at the end of the input.
func nextLine(br *bufio.Reader, keep int, buf []byte) (kept []byte, length int64, ok bool, err error) {
	kept = buf[:0]
	for {
		frag, err := br.ReadSlice('\n')
		if len(frag) > 0 {
			ok = true
		}
		length += int64(len(frag))
		if room := keep - len(kept); room > 0 {
			kept = append(kept, frag[:min(room, len(frag))]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return kept, length, ok, err
		}
		if len(frag) > 0 && frag[len(frag)-1] == '\n' {
			length--
		}
		// The carriage return of a CRLF line is dropped when it is kept;
		// past the cut it only counts as one more byte.
		if length <= int64(len(kept)) {
			kept = kept[:length]
			if length > 0 && kept[length-1] == '\r' {
				kept = kept[:length-1]
				length--
			}
		}
		return kept, length, ok, nil
	}
}

// openRegular opens name under root, refusing anything but a regular file:
// opening a FIFO waits for its other end, which may never come, and a
// device or socket is not a file to read or edit. The type is checked once
// before opening, so that such a file is not even opened, and again on the
// open handle, so that one swapped in meanwhile is caught; O_NONBLOCK keeps
// that open from waiting on a FIFO.
func openRegular(root *os.Root, name string, flag int, perm fs.FileMode) (*os.File, fs.FileInfo, error) {
	if fi, err := root.Stat(name); err == nil && !fi.Mode().IsRegular() {
		return nil, nil, notRegular(fi.Mode())
	} else if err != nil && (flag&os.O_CREATE == 0 || !errors.Is(err, fs.ErrNotExist)) {
		return nil, nil, err
	}
	f, err := root.OpenFile(name, flag|syscall.O_NONBLOCK, perm)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = notRegular(fi.Mode())
	}
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// notRegularError is what the file tools answer for a path that is there
// but is not a regular file.
type notRegularError struct{ mode fs.FileMode }

func notRegular(mode fs.FileMode) error { return &notRegularError{mode: mode} }

func (e *notRegularError) Error() string {
	var what string
	switch m := e.mode; {
	case m.IsDir():
		return "is a directory; list it with a command"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	default:
		what = "not a regular file (" + m.Type().String() + ")"
	}
	return "is " + what + "; the file tools only handle regular files"
}

// readSearchable returns the contents of name if it is a regular text file
// small enough to search.
func readSearchable(root *os.Root, name string) ([]byte, bool) {
	f, fi, err := openRegular(root, name, os.O_RDONLY, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if fi.Size() > maxSearchFile {
		return nil, false
	}
	// The size is read again through the limit: the file may grow.
	data, err := io.ReadAll(io.LimitReader(f, maxSearchFile+1))
	if err != nil || len(data) > maxSearchFile || isBinary(data[:min(len(data), binarySniffBytes)]) {
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

// WriteFile writes content to path, creating parent directories. Only a
// regular file is written, never a FIFO, device or socket.
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
	if dir := path.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("writing %q: creating parent directories: %w", p, err)
		}
	}
	// Not O_TRUNC: the file is emptied only once it is known to be regular.
	f, _, err := openRegular(root, rel, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("writing %q: %w", p, err)
	}
	if err := replaceContent(f, []byte(content)); err != nil {
		return fmt.Errorf("writing %q: %w", p, err)
	}
	return nil
}

// replaceContent makes data the whole content of f, and closes it.
func replaceContent(f *os.File, data []byte) error {
	err := f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt(data, 0)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
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
	f, fi, err := openRegular(root, rel, os.O_RDWR, 0)
	if err != nil {
		return 0, fmt.Errorf("editing %q: %w", p, err)
	}
	defer f.Close()
	if fi.Size() > maxEditBytes {
		return 0, fmt.Errorf("editing %q: the file holds %s, over the %s edit_file takes; change it with a command instead", p, formatBytes(fi.Size()), formatBytes(maxEditBytes))
	}
	data, err := io.ReadAll(io.LimitReader(f, maxEditBytes+1))
	if err != nil {
		return 0, fmt.Errorf("editing %q: %w", p, err)
	}
	if len(data) > maxEditBytes {
		return 0, fmt.Errorf("editing %q: the file grew past the %s edit_file takes", p, formatBytes(maxEditBytes))
	}
	n := bytes.Count(data, []byte(oldText))
	switch {
	case n == 0:
		return 0, fmt.Errorf("editing %q: the text to replace was not found (it must match exactly, whitespace included)", p)
	case n > 1 && !all:
		return 0, fmt.Errorf("editing %q: the text to replace occurs %d times; add context to make it unique, or replace all", p, n)
	}
	if err := replaceContent(f, bytes.ReplaceAll(data, []byte(oldText), []byte(newText))); err != nil {
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
		data, ok := readSearchable(root, name)
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
