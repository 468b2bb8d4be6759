package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// AgentsFile is one AGENTS.md file: its path relative to the workspace root,
// and its text.
type AgentsFile struct {
	Path, Text string
}

const maxAgentsBytes = 1 << 20

// AgentsChain returns the AGENTS.md files that apply to dirs (paths relative to
// the workspace root): the root's first, then the nested ones on the way down
// to each directory, outermost first, each file once. Missing files are simply
// absent. An entry that cannot be read (a directory outside the workspace, a
// file reached through a symlink leaving it, one over 1 MiB) is left out, and
// skipped says which and why: the files returned are usable either way, so
// one bad entry never costs the others.
func (w *Workspace) AgentsChain(dirs []string) (files []AgentsFile, skipped error) {
	root, err := w.openRoot()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	seen := map[string]bool{}
	var problems []error
	add := func(dir string) bool {
		p := path.Join(dir, "AGENTS.md")
		if seen[p] {
			return true
		}
		seen[p] = true
		text, ok, err := readAgents(root, p)
		if err != nil {
			problems = append(problems, fmt.Errorf("reading %s: %w", p, err))
			return false
		}
		if ok {
			files = append(files, AgentsFile{Path: p, Text: text})
		}
		return true
	}
	add(".")
	for _, d := range dirs {
		rel, err := w.relPath(d)
		if err != nil {
			problems = append(problems, fmt.Errorf("finding AGENTS.md files: %w", err))
			continue
		}
		if rel == "." {
			continue
		}
		parts := strings.Split(rel, "/")
		// Below an entry that failed, nothing is read: a directory that
		// leaves the workspace leads nowhere worth reading.
		for i := 0; i < len(parts) && parts[i] != ".git"; i++ {
			if !add(strings.Join(parts[:i+1], "/")) {
				break
			}
		}
	}
	return files, errors.Join(problems...)
}

// readAgents returns the text of the AGENTS.md file at p; ok is false when
// there is none, or something else than a regular file is there.
func readAgents(root *os.Root, p string) (text string, ok bool, err error) {
	f, fi, err := openRegular(root, p, os.O_RDONLY, 0)
	var other *notRegularError
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.As(err, &other):
		return "", false, nil
	case err != nil:
		return "", false, err
	}
	defer f.Close()
	if fi.Size() > maxAgentsBytes {
		return "", false, fmt.Errorf("%d bytes, over the limit of %d", fi.Size(), maxAgentsBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxAgentsBytes))
	if err != nil {
		return "", false, err
	}
	return string(data), true, nil
}
