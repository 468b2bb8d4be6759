package promptparts

import (
	"context"
	"fmt"

	"github.com/superagent-dev/superagent/internal/db"
)

// Draft is a configuration nobody saved: a patch on a base revision,
// validated as a save would be, stored nowhere. Trying it shows what
// recorded model requests would have read under it.
type Draft struct {
	// BaseRevision is the revision the patch applies to.
	BaseRevision int64
	Settings     Settings
}

// DraftFromPatch applies p to p.BaseRevision and validates the result,
// writing nothing. An invalid draft is a *ValidationError.
func (s *Service) DraftFromPatch(ctx context.Context, p Patch) (Draft, error) {
	base, err := s.Version(ctx, p.BaseRevision)
	if err != nil {
		return Draft{}, err
	}
	next, ps, err := apply(s.reg, base.Settings, p, s.knownBase(ctx, s.db))
	if err != nil {
		return Draft{}, err
	}
	ps = append(ps, validate(s.reg, next, s.cfg.SizeLimit)...)
	if err := ps.err(); err != nil {
		return Draft{}, err
	}
	return Draft{BaseRevision: p.BaseRevision, Settings: next}, nil
}

// DraftFromDir reads an exported directory (superagent prompts export) as
// a draft on the latest revision.
func (s *Service) DraftFromDir(ctx context.Context, dir string) (Draft, error) {
	head, err := s.Head(ctx)
	if err != nil {
		return Draft{}, err
	}
	p, err := s.patchFromDir(ctx, dir, head)
	if err != nil {
		return Draft{}, err
	}
	return s.DraftFromPatch(ctx, p)
}

// DraftPrompt is the prompt a recorded one would have been under d: the
// same input (environment, AGENTS.md, inferred rules), the draft's
// configuration and this release's built-in texts, as if d were saved as
// the next revision. It returns the recorded prompt rebuilt as well. It
// writes nothing.
func (s *Service) DraftPrompt(ctx context.Context, d Draft, sha string) (recorded Assembled, draft string, err error) {
	recorded, err = s.Reassemble(ctx, sha)
	if err != nil {
		return Assembled{}, "", err
	}
	c := s.compile(d.BaseRevision+1, d.Settings)
	if draft, err = c.build(recorded.Input); err != nil {
		return Assembled{}, "", fmt.Errorf("assembling the draft's prompt: %w", err)
	}
	return recorded, draft, nil
}

// knownBase reports, reading q, whether a SHA-256 is a default text some
// release this deployment ran shipped.
func (s *Service) knownBase(ctx context.Context, q db.Querier) func(string) (bool, error) {
	return func(sha string) (bool, error) {
		_, ok, err := s.store.defaultText(ctx, q, sha)
		return ok, err
	}
}
