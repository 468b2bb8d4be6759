package admin

import (
	"context"
	"strings"
	"time"
)

// PullFile is one file a pull request changes, as GitHub lists it.
type PullFile struct {
	Name string
	// Status is GitHub's: added, removed, modified, renamed, copied,
	// changed or unchanged.
	Status               string
	Additions, Deletions int
	// Patch is the file's unified diff hunks; GitHub leaves it out for
	// binary files and very large diffs.
	Patch string
}

// PullFiles lists a pull request's changed files, at most limit of them.
type PullFiles func(ctx context.Context, repo string, number, limit int) ([]PullFile, error)

// maxPullFiles is how many changed files the Ticket page shows.
const maxPullFiles = 100

// pullFilesView is the "Changed files" section of a Ticket page.
type pullFilesView struct {
	Files []pullFileView
	// More is true when the pull request changes more files than shown.
	More bool
	// Err says why the files could not be read.
	Err string
}

type pullFileView struct {
	PullFile
	Lines []patchLine
}

// patchLine is a row of a file's patch: Kind is "hunk", "add", "del" or
// "same".
type patchLine struct {
	Kind, Text string
}

// patchLines lays a unified diff's hunks out as rows.
func patchLines(patch string) []patchLine {
	if patch == "" {
		return nil
	}
	var out []patchLine
	for _, l := range strings.Split(strings.TrimSuffix(patch, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "@@"):
			out = append(out, patchLine{"hunk", l})
		case strings.HasPrefix(l, "+"):
			out = append(out, patchLine{"add", l[1:]})
		case strings.HasPrefix(l, "-"):
			out = append(out, patchLine{"del", l[1:]})
		case strings.HasPrefix(l, `\`): // "\ No newline at end of file"
			out = append(out, patchLine{"hunk", l})
		default:
			out = append(out, patchLine{"same", strings.TrimPrefix(l, " ")})
		}
	}
	return out
}

// pullFiles reads the Ticket's pull request's files for its page; GitHub
// being slow or down leaves a note instead of failing the page.
func (a *Admin) pullFiles(ctx context.Context, repo string, number int) *pullFilesView {
	if a.deps.PullFiles == nil || repo == "" || number == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	files, err := a.deps.PullFiles(ctx, repo, number, maxPullFiles+1)
	if err != nil {
		a.cfg.Logger.Warn("reading a pull request's files for the Ticket page", "repo", repo, "pr", number, "error", err)
		return &pullFilesView{Err: "The changed files could not be read from GitHub just now; reload to try again."}
	}
	v := &pullFilesView{More: len(files) > maxPullFiles}
	for _, f := range files[:min(len(files), maxPullFiles)] {
		v.Files = append(v.Files, pullFileView{PullFile: f, Lines: patchLines(f.Patch)})
	}
	return v
}
