// Package promptparts owns every word the agents read: the built-in prompt
// parts shipped in the binary, the team's versioned configuration (overrides
// of any part, the three team sections with their host-enforced settings,
// team skills and the policy), the "Default updated" bookkeeping that keeps a
// team's override honest across releases, and the assembly of the system
// prompt for each role from the latest revision on every model request.
//
// Every save is an immutable version of the whole configuration. Saves name
// their base revision and a stale one is refused with ErrConflict; the
// revision's primary key makes exactly one of two racing saves win on both
// databases.
package promptparts

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
)

// DefaultSizeLimit is the size limit of a configuration when Config sets
// none: 256 KiB of serialized configuration.
const DefaultSizeLimit = 256 << 10

// Config tunes a Service. The zero value is the documented default.
type Config struct {
	// Defaults holds the built-in texts, one Markdown file per key. Default:
	// the texts embedded in this binary (BuiltinDefaults). Tests pass an
	// fstest.MapFS to play a release that changed a default.
	Defaults fs.FS
	// SizeLimit caps the serialized configuration in bytes. Default
	// DefaultSizeLimit.
	SizeLimit int
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger receives handler errors. Default: discarded.
	Logger *slog.Logger
	// Version is the superagent version of this binary, recorded with each
	// revision it saves. Default: "".
	Version string
}

// Service is the prompt configuration of one deployment.
type Service struct {
	cfg   Config
	reg   *Registry
	db    *db.DB
	store versionStore
	// set is this release's built-in texts, recorded with every revision
	// saved and every prompt assembled; sets caches older ones.
	set  builtinSet
	sets setCache

	defaultsStored atomic.Bool
	storeMu        sync.Mutex

	cacheMu sync.Mutex
	cache   map[int64]*compiled

	watch headWatcher
}

// New reads and checks the built-in texts and returns the service. It does
// no I/O on d; Start (or the first save) stores the shipped defaults.
func New(cfg Config, d *db.DB) (*Service, error) {
	if cfg.Defaults == nil {
		cfg.Defaults = BuiltinDefaults()
	}
	if cfg.SizeLimit <= 0 {
		cfg.SizeLimit = DefaultSizeLimit
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	reg, err := NewRegistry(cfg.Defaults)
	if err != nil {
		return nil, err
	}
	return &Service{cfg: cfg, reg: reg, db: d, set: newBuiltinSet(reg), cache: map[int64]*compiled{}}, nil
}

// Registry returns the built-in texts of this release.
func (s *Service) Registry() *Registry { return s.reg }

// Start stores every default text of this release by SHA-256, so that the
// base of any override can be shown after a later release changed it, and on
// PostgreSQL starts listening for saves so that Assemble needs no query per
// call. The listener runs until ctx ends or Stop is called. Call Start at
// start-up; without it everything still works, with one head-revision query
// per Assemble, and saves store the defaults themselves.
func (s *Service) Start(ctx context.Context) error {
	if err := s.storeDefaults(ctx); err != nil {
		return err
	}
	s.startWatching(ctx)
	return nil
}

func (s *Service) storeDefaults(ctx context.Context) error {
	if s.defaultsStored.Load() {
		return nil
	}
	s.storeMu.Lock()
	defer s.storeMu.Unlock()
	if s.defaultsStored.Load() {
		return nil
	}
	now := s.cfg.Now()
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		for _, key := range s.reg.Keys() {
			if err := s.store.storeDefault(ctx, tx, s.reg.SHA256(key), key, s.reg.Text(key), now); err != nil {
				return err
			}
		}
		return s.store.storeSet(ctx, tx, s.set, now)
	})
	if err != nil {
		return fmt.Errorf("storing the built-in prompt texts: %w", err)
	}
	s.defaultsStored.Store(true)
	return nil
}

// Head returns the latest revision; 0 before the first save.
func (s *Service) Head(ctx context.Context) (int64, error) {
	return s.store.head(ctx, s.db)
}

// Version returns one version with its configuration. Revision 0 is the
// all-defaults configuration.
func (s *Service) Version(ctx context.Context, rev int64) (Version, error) {
	if rev == 0 {
		return Version{Settings: DefaultSettings()}, nil
	}
	if rev < 0 {
		return Version{}, fmt.Errorf("loading prompt revision %d: %w", rev, ErrNotFound)
	}
	info, raw, err := s.store.load(ctx, s.db, rev)
	if err != nil {
		return Version{}, err
	}
	settings, err := unmarshalSettings(raw)
	if err != nil {
		return Version{}, fmt.Errorf("loading prompt revision %d: %w", rev, err)
	}
	return Version{VersionInfo: info, Settings: settings}, nil
}

// Latest returns the latest version.
func (s *Service) Latest(ctx context.Context) (Version, error) {
	head, err := s.Head(ctx)
	if err != nil {
		return Version{}, err
	}
	return s.Version(ctx, head)
}

// Current returns the latest configuration and its revision, as cheaply as
// Assemble reads it: for the host's checks of the settings it enforces
// (agent line, review bots, auto-merge, commit author, policy). The result
// is the caller's own copy.
func (s *Service) Current(ctx context.Context) (Settings, int64, error) {
	head, err := s.latestRevision(ctx)
	if err != nil {
		return Settings{}, 0, err
	}
	c, err := s.compiled(ctx, head)
	if err != nil {
		return Settings{}, 0, err
	}
	return c.settings.clone(), head, nil
}

// Versions lists versions newest first: at most limit (default 100), older
// than before when before > 0.
func (s *Service) Versions(ctx context.Context, before int64, limit int) ([]VersionInfo, error) {
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	return s.store.list(ctx, s.db, before, limit)
}

// SaveMeta says who saves and why.
type SaveMeta struct {
	Origin Origin
	Actor  string
}

// SaveResult is the outcome of a save or restore.
type SaveResult struct {
	// Revision is the new revision, or the latest when Unchanged.
	Revision int64 `json:"revision"`
	// Unchanged says the save changed nothing and no version was created.
	Unchanged bool `json:"unchanged,omitempty"`
	// Inexact lists, for a restore, the parts the restored revision did not
	// override whose built-in text at that revision was not recorded: they
	// follow this release's default instead.
	Inexact []string `json:"inexact,omitempty"`
}

// Save applies p on top of p.BaseRevision as one new version. A stale base is
// a *ConflictError (errors.Is ErrConflict), an invalid result a
// *ValidationError listing every problem; in both cases nothing is written.
// A save that changes nothing creates no version.
func (s *Service) Save(ctx context.Context, p Patch, meta SaveMeta) (SaveResult, error) {
	return s.save(ctx, p, meta, nil)
}

// save is Save with the problems already found while parsing the patch,
// so that one answer lists them together with every other problem.
func (s *Service) save(ctx context.Context, p Patch, meta SaveMeta, found problems) (SaveResult, error) {
	if err := s.storeDefaults(ctx); err != nil {
		return SaveResult{}, err
	}
	return s.commit(ctx, p.BaseRevision, meta, p.Note, p.Request, nil, func(tx *db.Tx, head Settings) (Settings, problems, error) {
		next, ps, err := apply(s.reg, head, p, s.knownBase(ctx, tx))
		return next, append(found, ps...), err
	})
}

// SaveJSON parses body (the POST /api/config or orchestrator_prompts_save
// arguments) and saves it. Malformed JSON is a *SyntaxError. Unknown fields
// and wrongly typed values are listed with every other problem.
func (s *Service) SaveJSON(ctx context.Context, body []byte, meta SaveMeta) (SaveResult, error) {
	p, err := ParsePatch(body)
	var found problems
	if err != nil {
		var ve *ValidationError
		if !errors.As(err, &ve) {
			return SaveResult{}, err
		}
		found = ve.Problems
		if hasKey(found, "base_revision") {
			// Without a usable base nothing is saved, but the rest of the
			// draft is still checked against the latest revision.
			if p.BaseRevision, err = s.Head(ctx); err != nil {
				return SaveResult{}, err
			}
		}
	}
	return s.save(ctx, p, meta, found)
}

func hasKey(ps []Problem, key string) bool {
	for _, p := range ps {
		if p.Key == key {
			return true
		}
	}
	return false
}

// RestoreOptions tune a restore.
type RestoreOptions struct {
	// Note says why; default "restore revision N".
	Note string
	// FollowDefaults lets the parts the restored revision did not override
	// follow this release's defaults. Default false: the restore is exact,
	// and such a part whose built-in text changed since keeps the text it
	// had then, as an override based on it (so it reads Default updated).
	FollowDefaults bool
}

// Restore makes the content of revision rev the latest, exactly, as a new
// version on top of base (RestoreWith without options but the note).
func (s *Service) Restore(ctx context.Context, rev, base int64, meta SaveMeta, note string) (SaveResult, error) {
	return s.RestoreWith(ctx, rev, base, meta, RestoreOptions{Note: note})
}

// RestoreWith makes the content of revision rev the latest, as a new
// version on top of base. Revision 0 restores this release's defaults.
// Parts the current release no longer ships are dropped; the result must
// pass today's validation.
func (s *Service) RestoreWith(ctx context.Context, rev, base int64, meta SaveMeta, opts RestoreOptions) (SaveResult, error) {
	if err := s.storeDefaults(ctx); err != nil {
		return SaveResult{}, err
	}
	old, err := s.Version(ctx, rev)
	if err != nil {
		return SaveResult{}, err
	}
	note := opts.Note
	if note == "" {
		note = fmt.Sprintf("restore revision %d", rev)
	}
	restored := old.Settings.clone()
	var inexact []string
	if !opts.FollowDefaults && rev > 0 {
		b, err := s.builtins(ctx, old.BuiltinSet)
		if err != nil {
			return SaveResult{}, err
		}
		inexact = pinBuiltins(s.reg, &restored, b)
	}
	tidy(s.reg, &restored)
	res, err := s.commit(ctx, base, meta, note, "", &rev, func(_ *db.Tx, _ Settings) (Settings, problems, error) {
		return restored, nil, nil
	})
	res.Inexact = inexact
	return res, err
}

// pinBuiltins makes the parts st did not override keep the built-in text
// they had in b, where this release changed it: as overrides based on that
// text. It returns the parts whose text b does not know.
func pinBuiltins(reg *Registry, st *Settings, b *builtinTexts) []string {
	var inexact []string
	if st.Overrides == nil {
		st.Overrides = map[string]Override{}
	}
	for _, key := range reg.keys {
		if _, ok := st.Overrides[key]; ok || !b.has(key) {
			continue
		}
		text, known := b.text(key)
		switch {
		case !known:
			inexact = append(inexact, key)
		case text != reg.Text(key):
			st.Overrides[key] = Override{Text: text, BaseSHA256: b.shas[key]}
		}
	}
	return inexact
}

// commit runs one save: in a transaction it checks the base against the
// latest revision, builds the new configuration, validates it and inserts it
// as base+1.
func (s *Service) commit(ctx context.Context, base int64, meta SaveMeta, note, request string, restoredFrom *int64,
	build func(tx *db.Tx, head Settings) (Settings, problems, error),
) (SaveResult, error) {
	if meta.Origin != OriginPanel && meta.Origin != OriginTool {
		return SaveResult{}, fmt.Errorf("saving prompt configuration: unknown origin %q", meta.Origin)
	}
	var result SaveResult
	var saved *compiled
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		head, err := s.store.head(ctx, tx)
		if err != nil {
			return err
		}
		if head != base {
			return &ConflictError{BaseRevision: base, HeadRevision: head}
		}
		headSettings := DefaultSettings()
		if head > 0 {
			_, raw, err := s.store.load(ctx, tx, head)
			if err != nil {
				return err
			}
			if headSettings, err = unmarshalSettings(raw); err != nil {
				return err
			}
		}
		next, ps, err := build(tx, headSettings)
		if err != nil {
			return err
		}
		ps = append(ps, validate(s.reg, next, s.cfg.SizeLimit)...)
		if err := ps.err(); err != nil {
			return err
		}
		nextJSON, err := next.marshal()
		if err != nil {
			return err
		}
		headJSON, err := headSettings.marshal()
		if err != nil {
			return err
		}
		if string(nextJSON) == string(headJSON) {
			result = SaveResult{Revision: head, Unchanged: true}
			return nil
		}
		info := VersionInfo{
			BuiltinSet:    s.set.id,
			BinaryVersion: s.cfg.Version,
			Revision:      head + 1,
			Predecessor:   head,
			CreatedAt:     s.cfg.Now().UTC(),
			Origin:        meta.Origin,
			Actor:         meta.Actor,
			Note:          note,
			Request:       request,
			RestoredFrom:  restoredFrom,
		}
		if err := s.store.insert(ctx, tx, info, nextJSON); err != nil {
			return err
		}
		if err := s.notify(ctx, tx, info.Revision); err != nil {
			return fmt.Errorf("announcing prompt revision %d: %w", info.Revision, err)
		}
		result = SaveResult{Revision: info.Revision}
		saved = s.compile(info.Revision, next)
		return nil
	})
	if err != nil {
		var ce *ConflictError
		if errors.As(err, &ce) && ce.BaseRevision == base && ce.HeadRevision == base+1 && ce.HeadRevision != 0 {
			// Lost a race on the primary key: report the revision that won.
			if h, herr := s.Head(ctx); herr == nil {
				ce.HeadRevision = h
			}
		}
		return SaveResult{}, err
	}
	if saved != nil {
		s.remember(saved)
		s.watch.advance(saved.revision)
	}
	return result, nil
}

// SaveTool runs the main Session's orchestrator_prompts_save: args is the
// tool call's JSON (the POST /api/config body plus "request", the card id of
// the person's explicit request, which the caller has checked). actor is
// that person.
func (s *Service) SaveTool(ctx context.Context, actor string, args []byte) (SaveResult, error) {
	return s.SaveJSON(ctx, args, SaveMeta{Origin: OriginTool, Actor: actor})
}
