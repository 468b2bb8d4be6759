package promptparts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
)

// BuiltinState says how much is known of the built-in texts a revision was
// saved with.
type BuiltinState string

// The states of a revision's built-in texts.
const (
	// BuiltinsRecorded: the saving binary recorded every text.
	BuiltinsRecorded BuiltinState = "recorded"
	// BuiltinsBackfilled: saved before texts were recorded; the migration
	// filled in what it could know, and Unrecorded lists the rest.
	BuiltinsBackfilled BuiltinState = "backfilled"
	// BuiltinsNotRecorded: nothing is known of them.
	BuiltinsNotRecorded BuiltinState = "not_recorded"
	// BuiltinsThisRelease: revision 0, which is this release's defaults.
	BuiltinsThisRelease BuiltinState = "this_release"
)

// builtinSet is the set of built-in texts of one release, or what is known
// of the set a revision was saved with: by key, the SHA-256 of the text; an
// empty SHA-256 is a text that was not recorded.
type builtinSet struct {
	id    string
	parts map[string]string
}

// newBuiltinSet is the set the registry ships, named by the SHA-256 of its
// canonical JSON.
func newBuiltinSet(reg *Registry) builtinSet {
	parts := make(map[string]string, len(reg.keys))
	for _, k := range reg.keys {
		parts[k] = reg.SHA256(k)
	}
	b, _ := json.Marshal(parts) // sorted keys: canonical
	return builtinSet{id: SHA256(string(b)), parts: parts}
}

func (b builtinSet) json() string {
	out, _ := json.Marshal(b.parts)
	return string(out)
}

// builtinTexts is a set with its texts loaded, as history and rebuilds use
// it.
type builtinTexts struct {
	id    string
	state BuiltinState
	// keys are the parts the set has, known or not, in assembly order.
	keys  []string
	texts map[string]string
	// shas are the known texts' SHA-256s.
	shas map[string]string
	// unknown are keys whose text is not recorded (or not stored).
	unknown map[string]bool
}

// text returns key's text and whether it is known.
func (b *builtinTexts) text(key string) (string, bool) {
	t, ok := b.texts[key]
	return t, ok
}

// has reports whether the set has the part, known or not.
func (b *builtinTexts) has(key string) bool {
	return slices.Contains(b.keys, key)
}

// storeSet records a set; a no-op for one already stored.
func (versionStore) storeSet(ctx context.Context, q db.Querier, set builtinSet, now time.Time) error {
	_, err := q.Exec(ctx, `INSERT INTO prompt_builtin_sets (id, parts, created_at) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO NOTHING`, set.id, set.json(), now.UTC())
	if err != nil {
		return fmt.Errorf("storing the built-in text set %s: %w", set.id, err)
	}
	return nil
}

// loadSet reads a stored set; a JSON null part reads as "".
func (versionStore) loadSet(ctx context.Context, q db.Querier, id string) (builtinSet, error) {
	var raw string
	err := q.QueryRow(ctx, `SELECT parts FROM prompt_builtin_sets WHERE id = $1`, id).Scan(&raw)
	if errors.Is(err, db.ErrNoRows) {
		return builtinSet{}, fmt.Errorf("loading the built-in text set %s: it is not stored", id)
	}
	if err != nil {
		return builtinSet{}, fmt.Errorf("loading the built-in text set %s: %w", id, err)
	}
	var parts map[string]*string
	if err := json.Unmarshal([]byte(raw), &parts); err != nil {
		return builtinSet{}, fmt.Errorf("reading the built-in text set %s: %w", id, err)
	}
	set := builtinSet{id: id, parts: make(map[string]string, len(parts))}
	for k, sha := range parts {
		if sha != nil {
			set.parts[k] = *sha
		} else {
			set.parts[k] = ""
		}
	}
	return set, nil
}

// defaultTexts returns the stored texts of the SHA-256s, by SHA-256; one
// not stored is missing from the map.
func (versionStore) defaultTexts(ctx context.Context, q db.Querier, shas []string) (map[string]string, error) {
	out := map[string]string{}
	if len(shas) == 0 {
		return out, nil
	}
	args := make([]any, len(shas))
	marks := make([]string, len(shas))
	for i, sha := range shas {
		args[i] = sha
		marks[i] = fmt.Sprintf("$%d", i+1)
	}
	rows, err := q.Query(ctx, `SELECT sha256, text FROM prompt_default_texts WHERE sha256 IN (`+strings.Join(marks, ", ")+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("reading default texts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var sha, text string
		if err := rows.Scan(&sha, &text); err != nil {
			return nil, fmt.Errorf("reading default texts: %w", err)
		}
		out[sha] = text
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading default texts: %w", err)
	}
	return out, nil
}

// setCache keeps loaded sets by id; sets never change once stored.
type setCache struct {
	mu   sync.Mutex
	sets map[string]*builtinTexts
}

// maxSets bounds the loaded sets kept: one per release the deployment ran,
// plus the backfilled ones of old revisions.
const maxSets = 32

// thisRelease is this binary's built-in texts as a loaded set.
func (s *Service) thisRelease() *builtinTexts {
	return &builtinTexts{id: s.set.id, state: BuiltinsRecorded, keys: s.reg.Keys(), texts: s.reg.texts, shas: s.reg.sums, unknown: map[string]bool{}}
}

// builtins loads the set named id with its texts. An empty id is a
// revision whose texts were not recorded at all.
func (s *Service) builtins(ctx context.Context, id string) (*builtinTexts, error) {
	if id == "" {
		unknown := map[string]bool{}
		for _, k := range s.reg.keys {
			unknown[k] = true
		}
		return &builtinTexts{state: BuiltinsNotRecorded, keys: s.reg.Keys(), texts: map[string]string{}, shas: map[string]string{}, unknown: unknown}, nil
	}
	if id == s.set.id {
		return s.thisRelease(), nil
	}
	s.sets.mu.Lock()
	b, ok := s.sets.sets[id]
	s.sets.mu.Unlock()
	if ok {
		return b, nil
	}
	set, err := s.store.loadSet(ctx, s.db, id)
	if err != nil {
		return nil, err
	}
	var shas []string
	for _, sha := range set.parts {
		if sha != "" {
			shas = append(shas, sha)
		}
	}
	texts, err := s.store.defaultTexts(ctx, s.db, shas)
	if err != nil {
		return nil, fmt.Errorf("loading the built-in text set %s: %w", id, err)
	}
	b = &builtinTexts{id: id, state: BuiltinsRecorded, texts: map[string]string{}, shas: map[string]string{}, unknown: map[string]bool{}}
	if strings.HasPrefix(id, "backfill-") {
		b.state = BuiltinsBackfilled
	}
	for k, sha := range set.parts {
		b.keys = append(b.keys, k)
		if t, ok := texts[sha]; ok && sha != "" {
			b.texts[k], b.shas[k] = t, sha
		} else {
			b.unknown[k] = true
		}
	}
	sortKeys(b.keys)
	s.sets.mu.Lock()
	if len(s.sets.sets) >= maxSets {
		clear(s.sets.sets)
	}
	if s.sets.sets == nil {
		s.sets.sets = map[string]*builtinTexts{}
	}
	s.sets.sets[id] = b
	s.sets.mu.Unlock()
	return b, nil
}

// sortKeys orders part keys as the registry does: the required ones in
// assembly order, then the rest by name.
func sortKeys(keys []string) {
	order := func(k string) int {
		if i := slices.Index(RequiredKeys, k); i >= 0 {
			return i
		}
		return len(RequiredKeys)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if oa, ob := order(a), order(b); oa != ob {
			return oa - ob
		}
		return strings.Compare(a, b)
	})
}
