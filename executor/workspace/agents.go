package workspace

import (
	"errors"
	"fmt"
	"io/fs"
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
// absent; a file reached through a symlink leaving the workspace is an error.
func (w *Workspace) AgentsChain(dirs []string) ([]AgentsFile, error) {
	root, err := w.openRoot()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	seen := map[string]bool{}
	var files []AgentsFile
	add := func(dir string) error {
		p := path.Join(dir, "AGENTS.md")
		if seen[p] {
			return nil
		}
		seen[p] = true
		fi, err := root.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", p, err)
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		if fi.Size() > maxAgentsBytes {
			return fmt.Errorf("reading %s: %d bytes, over the limit of %d", p, fi.Size(), maxAgentsBytes)
		}
		data, err := root.ReadFile(p)
		if err != nil {
			return fmt.Errorf("reading %s: %w", p, err)
		}
		files = append(files, AgentsFile{Path: p, Text: string(data)})
		return nil
	}
	if err := add("."); err != nil {
		return nil, err
	}
	for _, d := range dirs {
		rel, err := w.relPath(d)
		if err != nil {
			return nil, fmt.Errorf("finding AGENTS.md files: %w", err)
		}
		if rel == "." {
			continue
		}
		parts := strings.Split(rel, "/")
		for i := range parts {
			if parts[i] == ".git" {
				break
			}
			if err := add(strings.Join(parts[:i+1], "/")); err != nil {
				return nil, err
			}
		}
	}
	return files, nil
}
