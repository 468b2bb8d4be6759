package promptparts

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
)

// Origin says where a save came from.
type Origin string

// The origins of a version.
const (
	OriginPanel Origin = "panel"
	OriginTool  Origin = "tool"
)

// VersionInfo describes one saved version without its content.
type VersionInfo struct {
	Revision     int64     `json:"revision"`
	Predecessor  int64     `json:"predecessor"`
	CreatedAt    time.Time `json:"created_at"`
	Origin       Origin    `json:"origin"`
	Actor        string    `json:"actor"`
	Note         string    `json:"note"`
	Request      string    `json:"request,omitempty"`
	RestoredFrom *int64    `json:"restored_from,omitempty"`
	// BuiltinSet names the built-in texts the revision was saved with; ""
	// when they were not recorded.
	BuiltinSet string `json:"builtin_set,omitempty"`
	// BinaryVersion is the superagent version that saved it, if recorded.
	BinaryVersion string `json:"binary_version,omitempty"`
}

// Version is one immutable configuration version.
type Version struct {
	VersionInfo
	Settings Settings `json:"config"`
}

// versionStore is the SQL of prompt_versions and prompt_default_texts.
type versionStore struct{}

const headQuery = `SELECT COALESCE(MAX(revision), 0) FROM prompt_versions`

func (versionStore) head(ctx context.Context, q db.Querier) (int64, error) {
	var rev int64
	if err := q.QueryRow(ctx, headQuery).Scan(&rev); err != nil {
		return 0, fmt.Errorf("reading the latest prompt revision: %w", err)
	}
	return rev, nil
}

// load returns the stored JSON of revision rev; revision 0 has none.
func (versionStore) load(ctx context.Context, q db.Querier, rev int64) (VersionInfo, []byte, error) {
	var (
		v            VersionInfo
		origin       string
		restoredFrom *int64
		config       string
	)
	var set *string
	err := q.QueryRow(ctx, `SELECT revision, predecessor, created_at, origin, actor, note, request, restored_from, config,
		builtin_set, binary_version
		FROM prompt_versions WHERE revision = $1`, rev).
		Scan(&v.Revision, &v.Predecessor, &v.CreatedAt, &origin, &v.Actor, &v.Note, &v.Request, &restoredFrom, &config,
			&set, &v.BinaryVersion)
	if set != nil {
		v.BuiltinSet = *set
	}
	if errors.Is(err, db.ErrNoRows) {
		return VersionInfo{}, nil, fmt.Errorf("loading prompt revision %d: %w", rev, ErrNotFound)
	}
	if err != nil {
		return VersionInfo{}, nil, fmt.Errorf("loading prompt revision %d: %w", rev, err)
	}
	v.Origin = Origin(origin)
	v.RestoredFrom = restoredFrom
	v.CreatedAt = v.CreatedAt.UTC()
	return v, []byte(config), nil
}

// insert writes a new version. A unique violation means another save took
// the revision first: the caller's base is stale.
func (versionStore) insert(ctx context.Context, q db.Querier, v VersionInfo, config []byte) error {
	_, err := q.Exec(ctx, `INSERT INTO prompt_versions
		(revision, predecessor, created_at, origin, actor, note, request, restored_from, config, builtin_set, binary_version)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		v.Revision, v.Predecessor, v.CreatedAt.UTC(), string(v.Origin), v.Actor, v.Note, v.Request, v.RestoredFrom, string(config),
		nullString(v.BuiltinSet), v.BinaryVersion)
	if err != nil {
		if db.IsUniqueViolation(err) {
			return &ConflictError{BaseRevision: v.Predecessor, HeadRevision: v.Revision}
		}
		return fmt.Errorf("inserting prompt revision %d: %w", v.Revision, err)
	}
	return nil
}

// list returns versions newest first, at most limit of them, below before
// (0: from the latest).
func (versionStore) list(ctx context.Context, q db.Querier, before int64, limit int) ([]VersionInfo, error) {
	if before <= 0 {
		before = 1 << 62
	}
	rows, err := q.Query(ctx, `SELECT revision, predecessor, created_at, origin, actor, note, request, restored_from,
		builtin_set, binary_version
		FROM prompt_versions WHERE revision < $1 ORDER BY revision DESC LIMIT $2`, before, limit)
	if err != nil {
		return nil, fmt.Errorf("listing prompt versions: %w", err)
	}
	defer rows.Close()
	var out []VersionInfo
	for rows.Next() {
		var (
			v      VersionInfo
			origin string
			set    *string
		)
		if err := rows.Scan(&v.Revision, &v.Predecessor, &v.CreatedAt, &origin, &v.Actor, &v.Note, &v.Request, &v.RestoredFrom,
			&set, &v.BinaryVersion); err != nil {
			return nil, fmt.Errorf("listing prompt versions: %w", err)
		}
		v.Origin = Origin(origin)
		v.CreatedAt = v.CreatedAt.UTC()
		if set != nil {
			v.BuiltinSet = *set
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing prompt versions: %w", err)
	}
	return out, nil
}

// storeDefault records a shipped default text; it is a no-op for a text
// already stored.
func (versionStore) storeDefault(ctx context.Context, q db.Querier, sha, key, text string, now time.Time) error {
	_, err := q.Exec(ctx, `INSERT INTO prompt_default_texts (sha256, key, text, created_at)
		VALUES ($1, $2, $3, $4) ON CONFLICT (sha256) DO NOTHING`, sha, key, text, now.UTC())
	if err != nil {
		return fmt.Errorf("storing default text of %s: %w", key, err)
	}
	return nil
}

// defaultText returns a stored default text by SHA-256; ok is false when no
// release this deployment ran shipped it.
func (versionStore) defaultText(ctx context.Context, q db.Querier, sha string) (string, bool, error) {
	var text string
	err := q.QueryRow(ctx, `SELECT text FROM prompt_default_texts WHERE sha256 = $1`, sha).Scan(&text)
	if errors.Is(err, db.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("reading default text %s: %w", sha, err)
	}
	return text, true, nil
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
