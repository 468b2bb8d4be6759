package workspace

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Finder recognises secrets in text, naming what it found but never the
// value; secret.Scrubber is one.
type Finder interface {
	Find(text string) (kind string, found bool)
}

// LeakError refuses a push whose content holds a secret. Its message
// names the file and the kind of secret, never the value, so that it can
// go to the model.
type LeakError struct {
	Path string // the file that holds it
	Kind string
	What string // "the checkpoint" or "the branch"
}

func (e *LeakError) Error() string {
	return fmt.Sprintf("%s was not pushed: %s holds %s; remove it from the file (and from every commit not yet pushed, e.g. by amending or resetting them) and keep secrets in the environment, never in the repository",
		e.What, e.Path, e.Kind)
}

// findLeak looks at every file a push of tips would send, the blobs not
// reachable from what the remote has (origin's branches and, when not
// "", the ref value remoteHas), and returns the first one that holds a
// secret, or nil. It reads objects, never the work tree.
func (w *Workspace) findLeak(ctx context.Context, finder Finder, what string, tips []string, remoteHas string) (*LeakError, error) {
	if finder == nil {
		return nil, nil
	}
	args := append([]string{"rev-list", "--objects", "--filter=object:type=blob", "--filter-provided-objects", "--no-object-names"}, tips...)
	args = append(args, "--not", "--remotes=origin")
	if remoteHas != "" && w.refExists(ctx, remoteHas) {
		args = append(args, remoteHas)
	}
	out, err := w.git(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("listing what the push would send: %w", err)
	}
	blobs := map[string]bool{}
	for f := range strings.FieldsSeq(out) {
		blobs[f] = true
	}
	logArgs := append([]string{"log", "--format=%H%n%B%x00"}, tips...)
	logArgs = append(logArgs, "--not", "--remotes=origin")
	if remoteHas != "" && w.refExists(ctx, remoteHas) {
		logArgs = append(logArgs, remoteHas)
	}
	msgs, err := w.git(ctx, logArgs...)
	if err != nil {
		return nil, fmt.Errorf("listing what the push would send: %w", err)
	}
	for m := range strings.SplitSeq(msgs, "\x00") {
		sha, body, _ := strings.Cut(strings.TrimLeft(m, "\n"), "\n")
		if kind, ok := finder.Find(body); ok {
			return &LeakError{Path: "the message of commit " + sha, Kind: kind, What: what}, nil
		}
	}
	if len(blobs) == 0 {
		return nil, nil
	}
	// Names for the message: where each new blob is in the tips' trees
	// (a blob only in an older commit is named by that commit).
	names := map[string]string{}
	for _, tip := range tips {
		ls, err := w.git(ctx, "ls-tree", "-r", "-z", "--full-tree", tip)
		if err != nil {
			return nil, fmt.Errorf("listing what the push would send: %w", err)
		}
		for rec := range strings.SplitSeq(ls, "\x00") {
			meta, name, ok := strings.Cut(rec, "\t")
			if f := strings.Fields(meta); ok && len(f) == 3 && blobs[f[2]] && names[f[2]] == "" {
				names[f[2]] = name
			}
		}
	}
	var list strings.Builder
	for b := range blobs {
		list.WriteString(b + "\n")
	}
	sc := &batchScanner{finder: finder}
	if _, err := w.m.git.run(ctx, gitCmd{dir: w.dir, args: []string{"cat-file", "--batch"}, stdin: strings.NewReader(list.String()), stdout: sc}); err != nil {
		return nil, fmt.Errorf("reading what the push would send: %w", err)
	}
	if sc.err != nil {
		return nil, sc.err
	}
	if sc.found == "" {
		return nil, nil
	}
	path := names[sc.found]
	if path == "" {
		path = "a file in a commit not yet pushed (blob " + sc.found[:12] + ")"
	}
	return &LeakError{Path: path, Kind: sc.kind, What: what}, nil
}

// scanChunk is how much of a blob the scanner looks at once; scanOverlap
// is kept from the previous chunk, so a secret across the boundary (up to
// that long, in any encoding) is still seen.
const (
	scanChunk   = 1 << 20
	scanOverlap = 64 << 10
)

// batchScanner reads `git cat-file --batch` output as it streams and
// looks for secrets in each blob, keeping at most a chunk in memory.
type batchScanner struct {
	finder Finder
	buf    []byte
	// Of the blob being read: its id, how many content bytes remain, and
	// whether the chunk in buf has been scanned up to scanned.
	blob    string
	left    int64
	inBlob  bool
	scanned int
	found   string // the first blob found holding a secret
	kind    string
	err     error
}

func (b *batchScanner) Write(p []byte) (int, error) {
	if b.found != "" || b.err != nil {
		return len(p), nil //nolint:nilerr // drained: git must finish writing; the error is read from b.err
	}
	b.buf = append(b.buf, p...)
	for b.found == "" && b.err == nil {
		if !b.inBlob {
			i := bytes.IndexByte(b.buf, '\n')
			if i < 0 {
				if len(b.buf) > 1024 {
					b.err = fmt.Errorf("reading what the push would send: a header over 1 KiB")
				}
				break
			}
			f := strings.Fields(string(b.buf[:i]))
			b.buf = b.buf[i+1:]
			if len(f) != 3 {
				b.err = fmt.Errorf("reading what the push would send: unexpected %q", strings.Join(f, " "))
				break
			}
			n, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				b.err = fmt.Errorf("reading what the push would send: unexpected size %q", f[2])
				break
			}
			b.blob, b.left, b.inBlob, b.scanned = f[0], n+1, true, 0 // +1: the newline after the content
			continue
		}
		// Content: scan what arrived, keep an overlap for the next part.
		avail := int64(len(b.buf))
		end := min(avail, b.left)
		if end < b.left && end < scanChunk {
			break // wait for a whole chunk
		}
		content := b.buf[:end]
		if end == b.left {
			content = content[:len(content)-1]
		}
		if kind, ok := b.finder.Find(string(content)); ok {
			b.found, b.kind = b.blob, kind
			break
		}
		if end == b.left {
			b.buf, b.inBlob = b.buf[end:], false
			continue
		}
		keep := min(int64(scanOverlap), end)
		b.left -= end - keep
		b.buf = append([]byte{}, b.buf[end-keep:]...)
		if int64(len(b.buf)) <= keep {
			break
		}
	}
	return len(p), nil
}
