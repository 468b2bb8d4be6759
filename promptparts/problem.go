package promptparts

import (
	"errors"
	"fmt"
	"strings"
)

// ErrConflict is returned (wrapped in a *ConflictError) when a save names a
// base revision that is no longer the latest. Nothing was written.
var ErrConflict = errors.New("the configuration changed since the base revision")

// ErrNotFound is returned when a revision does not exist.
var ErrNotFound = errors.New("no such revision")

// ConflictError is a stale save: it names the revision the save was based on
// and the latest one, so the client can rebase its draft.
type ConflictError struct {
	BaseRevision int64
	HeadRevision int64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("saving on base revision %d: the latest revision is %d: %v", e.BaseRevision, e.HeadRevision, ErrConflict)
}

// Is makes errors.Is(err, ErrConflict) hold.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// Problem is one thing wrong with a save. Key locates it: "overrides.<part>",
// "sections.communication.agent_line", "skills.<name>", "policy.rules[1].id",
// "size"…
type Problem struct {
	Key     string `json:"key"`
	Message string `json:"message"`
}

// ValidationError lists every problem of a refused save; nothing was
// written.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Key + ": " + p.Message
	}
	return fmt.Sprintf("invalid prompt configuration (%d problems): %s", len(e.Problems), strings.Join(parts, "; "))
}

// problems collects Problems in the order they are found.
type problems []Problem

func (ps *problems) add(key, format string, args ...any) {
	*ps = append(*ps, Problem{Key: key, Message: fmt.Sprintf(format, args...)})
}

func (ps problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	return &ValidationError{Problems: ps}
}
