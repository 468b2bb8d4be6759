package promptparts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/superagent-dev/superagent/policy"
)

// The layout of an exported configuration directory:
//
//	manifest.json                  revision and each part file's base SHA-256
//	parts/<key>.md                 one file per overridden part (with
//	                               defaults: one per part)
//	sections/<name>.md             the three team sections' texts
//	sections/settings.json         the sections' host-enforced settings
//	skills/<name>.md               one file per team skill
//	policy.json                    mode, exemption and rules
//
// Texts are written and read byte for byte.
const (
	manifestFile = "manifest.json"
	settingsFile = "sections/settings.json"
	policyFile   = "policy.json"
)

// Manifest is manifest.json of an exported directory.
type Manifest struct {
	// Revision is the revision exported, or last imported; importing uses
	// it as the base.
	Revision int64 `json:"revision"`
	// Bases maps each part file to the default it was based on.
	Bases map[string]string `json:"bases"`
	// Defaults are the part files written with their default text (an
	// export with defaults): such a file left as it was is no override,
	// so the part keeps following the defaults.
	Defaults []string `json:"defaults,omitempty"`
}

type sectionSettings struct {
	AgentLine    string       `json:"agent_line"`
	ReviewBots   []string     `json:"review_bots"`
	AutoMerge    AutoMerge    `json:"auto_merge"`
	CommitAuthor CommitAuthor `json:"commit_author"`
}

var sectionFiles = []string{"communication", "ticket_scope", "delivery_requirements"}

// layoutEntries are the files and directories an export owns in its
// directory; a forced export replaces them and leaves anything else.
var layoutEntries = []string{manifestFile, policyFile, "parts", "sections", "skills"}

// ExportOptions are the choices of an export.
type ExportOptions struct {
	// Force exports into a directory that is not empty, replacing what an
	// earlier export wrote there.
	Force bool
	// Defaults also writes every part that is not overridden, with this
	// release's default text, to edit: left as it is, it stays no
	// override.
	Defaults bool
}

// Export writes the latest revision to dir (created if missing) and returns
// the revision written. A directory that is not empty is refused unless
// opts.Force is set; then what an earlier export wrote there is replaced,
// so a part or skill removed since does not linger, and other files (a
// README, .git) are kept.
func (s *Service) Export(ctx context.Context, dir string, opts ExportOptions) (int64, error) {
	v, err := s.Latest(ctx)
	if err != nil {
		return 0, err
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		if !opts.Force {
			return 0, fmt.Errorf("exporting prompts to %s: the directory is not empty (force replaces an earlier export there)", dir)
		}
		for _, name := range layoutEntries {
			if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
				return 0, fmt.Errorf("exporting prompts to %s: %w", dir, err)
			}
		}
	}
	st := v.Settings
	m := Manifest{Revision: v.Revision, Bases: map[string]string{}}
	files := map[string][]byte{}
	for key, o := range st.Overrides {
		files["parts/"+key+".md"] = []byte(o.Text)
		m.Bases[key] = o.BaseSHA256
	}
	if opts.Defaults {
		for _, key := range s.reg.Keys() {
			if _, ok := st.Overrides[key]; !ok {
				files["parts/"+key+".md"] = []byte(s.reg.Text(key))
				m.Bases[key] = s.reg.SHA256(key)
				m.Defaults = append(m.Defaults, key)
			}
		}
	}
	sec := st.Sections
	files["sections/communication.md"] = []byte(sec.Communication.Text)
	files["sections/ticket_scope.md"] = []byte(sec.TicketScope.Text)
	files["sections/delivery_requirements.md"] = []byte(sec.DeliveryRequirements.Text)
	am := sec.DeliveryRequirements.AutoMerge
	am.Checks = orEmpty(am.Checks)
	files[settingsFile] = mustIndent(sectionSettings{
		AgentLine:    sec.Communication.AgentLine,
		ReviewBots:   orEmpty(sec.Communication.ReviewBots),
		AutoMerge:    am,
		CommitAuthor: sec.DeliveryRequirements.CommitAuthor,
	})
	for name, text := range st.Skills {
		files["skills/"+name+".md"] = []byte(text)
	}
	pol := st.Policy
	if pol.Rules == nil {
		pol.Rules = []policy.Rule{}
	}
	files[policyFile] = mustIndent(pol)
	files[manifestFile] = mustIndent(m)
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return 0, fmt.Errorf("exporting prompts to %s: %w", dir, err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return 0, fmt.Errorf("exporting prompts to %s: %w", dir, err)
		}
	}
	return v.Revision, nil
}

func mustIndent(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("serializing %T: %v", v, err))
	}
	return append(b, '\n')
}

// Import saves the configuration in dir as one new version on top of base.
// A negative base means the revision in the directory's manifest. Whatever
// dir does not contain (an override, a skill) is removed. Importing is
// idempotent: when dir holds what the latest revision holds, nothing is
// saved and the result is Unchanged, whatever base it names.
//
// Then dir's manifest names the revision saved (or the latest, which dir
// holds) and each override's base, so the directory is edited and
// imported again without a new export.
func (s *Service) Import(ctx context.Context, dir string, base int64, actor string) (SaveResult, error) {
	head, next, err := s.dirSettings(ctx, dir)
	if err != nil {
		return SaveResult{}, err
	}
	a, err := head.Settings.marshal()
	if err != nil {
		return SaveResult{}, err
	}
	if b, err := next.marshal(); err == nil && string(a) == string(b) {
		res := SaveResult{Revision: head.Revision, Unchanged: true}
		return res, s.recordBase(dir, head)
	}
	p, err := s.patchFromDir(ctx, dir, base)
	if err != nil {
		return SaveResult{}, err
	}
	res, err := s.Save(ctx, p, SaveMeta{Origin: OriginPanel, Actor: actor})
	if err != nil {
		return res, err
	}
	v, err := s.Version(ctx, res.Revision)
	if err != nil {
		return res, fmt.Errorf("saved revision %d, but reading it back for %s: %w", res.Revision, dir, err)
	}
	return res, s.recordBase(dir, v)
}

// recordBase rewrites dir's manifest after an import of v: v's revision,
// its overrides' bases, and the part files still left at their default
// text (with the base they were written from).
func (s *Service) recordBase(dir string, v Version) error {
	var old Manifest
	if err := readJSON(os.DirFS(dir), manifestFile, &old); err != nil {
		return err
	}
	m := Manifest{Revision: v.Revision, Bases: map[string]string{}}
	for key, o := range v.Settings.Overrides {
		m.Bases[key] = o.BaseSHA256
	}
	for _, key := range old.Defaults {
		if _, ok := v.Settings.Overrides[key]; ok {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(dir, "parts", filepath.FromSlash(key)+".md")); err == nil && SHA256(string(b)) == old.Bases[key] {
			m.Bases[key] = old.Bases[key]
			m.Defaults = append(m.Defaults, key)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, manifestFile), mustIndent(m), 0o644); err != nil {
		return fmt.Errorf("saved revision %d, but recording it in %s: %w", v.Revision, dir, err)
	}
	return nil
}

// DiffDir compares the latest revision with the configuration in dir.
func (s *Service) DiffDir(ctx context.Context, dir string) (Diff, error) {
	head, next, err := s.dirSettings(ctx, dir)
	if err != nil {
		return Diff{}, err
	}
	// Both sides are what the agents would read now, with this release's
	// built-in texts.
	now := s.thisRelease()
	return Diff{From: head.Revision, To: -1, Changes: s.diffSettings(head.Settings, now, next, now)}, nil
}

// dirSettings returns the latest revision and the configuration dir would
// make of it.
func (s *Service) dirSettings(ctx context.Context, dir string) (Version, Settings, error) {
	v, err := s.Latest(ctx)
	if err != nil {
		return Version{}, Settings{}, err
	}
	p, err := s.patchFromDir(ctx, dir, v.Revision)
	if err != nil {
		return Version{}, Settings{}, err
	}
	next, ps, err := apply(s.reg, v.Settings, p, s.knownBase(ctx, s.db))
	if err != nil {
		return Version{}, Settings{}, err
	}
	if err := ps.err(); err != nil {
		return Version{}, Settings{}, err
	}
	return v, next, nil
}

// patchFromDir reads an exported directory as a patch that turns the
// configuration at base into the directory's content.
func (s *Service) patchFromDir(ctx context.Context, dir string, base int64) (Patch, error) {
	fsys := os.DirFS(dir)
	var m Manifest
	if err := readJSON(fsys, manifestFile, &m); err != nil {
		return Patch{}, err
	}
	if base < 0 {
		base = m.Revision
	}
	old, err := s.Version(ctx, base)
	if err != nil {
		return Patch{}, fmt.Errorf("importing prompts from %s: %w", dir, err)
	}
	p := Patch{
		BaseRevision: base,
		Note:         "import from " + filepath.Base(dir),
		Overrides:    map[string]*OverridePatch{},
		Skills:       map[string]*string{},
	}
	var ps problems

	present := map[string]bool{}
	err = walkMarkdown(fsys, "parts", func(name string, text string) {
		if slices.Contains(m.Defaults, name) && SHA256(text) == m.Bases[name] {
			// A default text written to edit and left as it was: the
			// part follows the defaults, today's and later ones.
			return
		}
		present[name] = true
		p.Overrides[name] = &OverridePatch{Text: text, Base: m.Bases[name]}
	})
	if err != nil {
		return Patch{}, fmt.Errorf("importing prompts from %s: %w", dir, err)
	}
	for key := range old.Settings.Overrides {
		if !present[key] {
			p.Overrides[key] = nil
		}
	}

	texts := map[string]*string{}
	for _, name := range sectionFiles {
		b, err := fs.ReadFile(fsys, "sections/"+name+".md")
		if errors.Is(err, fs.ErrNotExist) {
			empty := ""
			texts[name] = &empty
			continue
		}
		if err != nil {
			return Patch{}, fmt.Errorf("importing prompts from %s: %w", dir, err)
		}
		text := string(b)
		texts[name] = &text
	}
	ss := sectionSettings{AgentLine: DefaultAgentLine}
	if err := readJSON(fsys, settingsFile, &ss); err != nil {
		return Patch{}, err
	}
	p.Sections = SectionsPatch{
		Communication: &CommunicationPatch{Text: texts["communication"], AgentLine: &ss.AgentLine, ReviewBots: &ss.ReviewBots},
		TicketScope:   &TicketScopePatch{Text: texts["ticket_scope"]},
		DeliveryRequirements: &DeliveryRequirementsPatch{
			Text: texts["delivery_requirements"],
			AutoMerge: &AutoMergePatch{
				Enabled: &ss.AutoMerge.Enabled, MaxChangedLines: &ss.AutoMerge.MaxChangedLines,
				Checks: &ss.AutoMerge.Checks, Approvals: &ss.AutoMerge.Approvals,
			},
			CommitAuthor: &CommitAuthorPatch{Name: &ss.CommitAuthor.Name, Email: &ss.CommitAuthor.Email},
		},
	}

	skills := map[string]bool{}
	err = walkMarkdown(fsys, "skills", func(name string, text string) {
		if strings.Contains(name, "/") {
			ps.add("skills."+name, "skills are files directly under skills/")
			return
		}
		skills[name] = true
		p.Skills[name] = &text
	})
	if err != nil {
		return Patch{}, fmt.Errorf("importing prompts from %s: %w", dir, err)
	}
	for name := range old.Settings.Skills {
		if !skills[name] {
			p.Skills[name] = nil
		}
	}

	pol := policy.Default()
	if err := readJSON(fsys, policyFile, &pol); err != nil {
		return Patch{}, err
	}
	p.Policy = PolicyPatch{Mode: &pol.Mode, ExplicitRequestExemption: &pol.ExplicitRequestExemption, Rules: &pol.Rules}
	if err := ps.err(); err != nil {
		return Patch{}, err
	}
	return p, nil
}

// walkMarkdown calls fn with the name (path without ".md") and text of every
// Markdown file under root; a missing root has none.
func walkMarkdown(fsys fs.FS, root string, fn func(name, text string)) error {
	err := fs.WalkDir(fsys, root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if de.IsDir() || path.Ext(p) != ".md" {
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		fn(strings.TrimSuffix(strings.TrimPrefix(p, root+"/"), ".md"), string(b))
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// readJSON reads name strictly: unknown fields are an error, so a typo in a
// hand-edited file is not silently ignored.
func readJSON(fsys fs.FS, name string, v any) error {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	return nil
}
