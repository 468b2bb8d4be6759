package promptparts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/policy"
)

// ErrNotRecorded is returned when a prompt cannot be rebuilt: it was
// assembled before prompts were recorded, or a built-in text it used was
// not stored.
var ErrNotRecorded = errors.New("not recorded")

// storedInput is an Input as prompt_assemblies keeps it.
type storedInput struct {
	Role          Role          `json:"role"`
	Environment   []storedVar   `json:"environment"`
	AgentsMD      []storedFile  `json:"agents_md"`
	InferredRules []policy.Rule `json:"inferred_rules"`
}

type storedVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type storedFile struct {
	Path string `json:"path"`
	Text string `json:"text"`
}

func encodeInput(in Input) string {
	si := storedInput{Role: in.Role, Environment: []storedVar{}, AgentsMD: []storedFile{}, InferredRules: in.InferredRules}
	for _, v := range in.Environment {
		si.Environment = append(si.Environment, storedVar(v))
	}
	for _, f := range in.AgentsMD {
		si.AgentsMD = append(si.AgentsMD, storedFile(f))
	}
	b, _ := json.Marshal(si)
	return string(b)
}

func decodeInput(raw string) (Input, error) {
	var si storedInput
	if err := json.Unmarshal([]byte(raw), &si); err != nil {
		return Input{}, fmt.Errorf("reading a recorded prompt input: %w", err)
	}
	in := Input{Role: si.Role, InferredRules: si.InferredRules}
	for _, v := range si.Environment {
		in.Environment = append(in.Environment, Var(v))
	}
	for _, f := range si.AgentsMD {
		in.AgentsMD = append(in.AgentsMD, AgentsFile(f))
	}
	return in, nil
}

// record stores what prompt was assembled from, once per distinct prompt:
// a Session records the prompt's SHA-256 with each model request, and
// Reassemble rebuilds it from this.
func (s *Service) record(ctx context.Context, rev int64, in Input, prompt string) error {
	if err := s.storeDefaults(ctx); err != nil {
		return err
	}
	_, err := s.db.Exec(ctx, `INSERT INTO prompt_assemblies (sha256, revision, role, builtin_set, input, created_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (sha256) DO NOTHING`,
		SHA256(prompt), rev, string(in.Role), s.set.id, encodeInput(in), s.cfg.Now().UTC())
	if err != nil {
		return fmt.Errorf("recording the %s prompt of revision %d: %w", in.Role, rev, err)
	}
	return nil
}

// Assembled is a recorded prompt rebuilt.
type Assembled struct {
	// SHA256 is the recorded prompt's; Text hashes to it when Verified.
	SHA256     string    `json:"sha256"`
	Revision   int64     `json:"revision"`
	Role       Role      `json:"role"`
	BuiltinSet string    `json:"builtin_set"`
	CreatedAt  time.Time `json:"created_at"`
	// Input is what the caller gave the assembly.
	Input Input `json:"-"`
	// Text is the rebuilt prompt; Segments are its stretches with their
	// origins.
	Text     string    `json:"text"`
	Segments []Segment `json:"segments"`
	// Verified says the rebuilt text has the recorded SHA-256: it is byte
	// for byte the prompt that was assembled.
	Verified bool `json:"verified"`
}

// Reassemble rebuilds the prompt assembled with SHA-256 sha from what was
// recorded: its revision, the built-in texts of the release that assembled
// it and the caller's input. ErrNotRecorded means it cannot be.
func (s *Service) Reassemble(ctx context.Context, sha string) (Assembled, error) {
	a, c, err := s.recorded(ctx, sha)
	if err != nil {
		return Assembled{}, err
	}
	if a.Text, err = c.build(a.Input); err != nil {
		return Assembled{}, err
	}
	if a.Segments, err = c.explain(a.Input); err != nil {
		return Assembled{}, err
	}
	a.Verified = SHA256(a.Text) == sha && joinSegments(a.Segments) == a.Text
	return a, nil
}

// recorded loads a recorded assembly and compiles its revision with its
// built-in texts.
func (s *Service) recorded(ctx context.Context, sha string) (Assembled, *compiled, error) {
	a := Assembled{SHA256: sha}
	var (
		role, raw string
	)
	err := s.db.QueryRow(ctx, `SELECT revision, role, builtin_set, input, created_at FROM prompt_assemblies WHERE sha256 = $1`, sha).
		Scan(&a.Revision, &role, &a.BuiltinSet, &raw, &a.CreatedAt)
	if errors.Is(err, db.ErrNoRows) {
		return Assembled{}, nil, fmt.Errorf("rebuilding prompt %s: %w", sha, ErrNotRecorded)
	}
	if err != nil {
		return Assembled{}, nil, fmt.Errorf("rebuilding prompt %s: %w", sha, err)
	}
	a.Role, a.CreatedAt = Role(role), a.CreatedAt.UTC()
	if a.Input, err = decodeInput(raw); err != nil {
		return Assembled{}, nil, err
	}
	v, err := s.Version(ctx, a.Revision)
	if err != nil {
		return Assembled{}, nil, fmt.Errorf("rebuilding prompt %s: %w", sha, err)
	}
	b, err := s.builtins(ctx, a.BuiltinSet)
	if err != nil {
		return Assembled{}, nil, fmt.Errorf("rebuilding prompt %s: %w", sha, err)
	}
	for _, key := range b.keys {
		if _, overridden := v.Settings.Overrides[key]; b.unknown[key] && !overridden && slices.Contains(RequiredKeys, key) {
			return Assembled{}, nil, fmt.Errorf("rebuilding prompt %s: the built-in text of %s is %w", sha, key, ErrNotRecorded)
		}
	}
	c := compileWith(a.Revision, v.Settings, b.keys, func(key string) string {
		t, _ := b.text(key)
		return t
	})
	return a, c, nil
}
