package promptparts

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/superagent-dev/superagent/policy"
)

// Role is the kind of Session a prompt is assembled for.
type Role string

// The two roles.
const (
	// RoleMain is the deployment's single routing Session.
	RoleMain Role = "main"
	// RoleExecutor is a Ticket's Executor Session.
	RoleExecutor Role = "executor"
)

// Var is one line of the Environment section.
type Var struct {
	Name  string
	Value string
}

// AgentsFile is one AGENTS.md of the repository an Executor works in.
type AgentsFile struct {
	// Path is the file's path in the repository ("AGENTS.md",
	// "services/api/AGENTS.md").
	Path string
	// Text is its content.
	Text string
}

// Input is what the caller knows about the Session a prompt is for. The
// configuration itself always comes from the latest revision.
type Input struct {
	// Role selects the main Session or an Executor.
	Role Role
	// Environment lines, in order: deployment-wide values for the main
	// Session, the Ticket's values (repository, branch, Mandate…) for an
	// Executor.
	Environment []Var
	// AgentsMD is the repository's AGENTS.md chain, outermost first
	// (Executor only).
	AgentsMD []AgentsFile
	// InferredRules are the policy rules an inferred Ticket was admitted
	// under; when set, the Executor's prompt ends with a note limiting it to
	// them (Executor only). Nil for an explicit request.
	InferredRules []policy.Rule
}

// Assemble builds the system prompt for in.Role from the latest revision and
// returns it with that revision, which the caller records with the model
// request. Call it for every model request: saves take effect on the next
// call in every process, with no restart and no TTL.
//
// The order is fixed (docs/prompts.md#assembly-order): shared instructions and the role, the team
// sections, subscriptions and replies, dispatch (main) or work (Executor),
// admission (main), handoff, then for an Executor the coding prompt and
// AGENTS.md, the Environment section, and last the Policy section (main) or
// the inferred-Ticket note (Executor). Everything that varies most comes
// last, so that prompt caching reuses the longest prefix.
func (s *Service) Assemble(ctx context.Context, in Input) (string, int64, error) {
	head, err := s.latestRevision(ctx)
	if err != nil {
		return "", 0, fmt.Errorf("assembling the %s prompt: %w", in.Role, err)
	}
	return s.AssembleAt(ctx, head, in)
}

// AssembleAt builds the prompt from revision rev instead of the latest, for
// an Executor reading a revision it worked under. Parts the revision did not
// override read as this release's defaults. The first time a prompt is
// built in this process, what it was built from is recorded under its
// SHA-256 (see Reassemble).
func (s *Service) AssembleAt(ctx context.Context, rev int64, in Input) (string, int64, error) {
	c, err := s.compiled(ctx, rev)
	if err != nil {
		return "", 0, fmt.Errorf("assembling the %s prompt at revision %d: %w", in.Role, rev, err)
	}
	if prompt, ok := c.outputs.get(in); ok {
		return prompt, rev, nil
	}
	prompt, err := c.build(in)
	if err != nil {
		return "", 0, err
	}
	// Once per distinct prompt and process: what it was built from, so
	// that a recorded model request's prompt can be rebuilt exactly.
	if err := s.record(ctx, rev, in, prompt); err != nil {
		return "", 0, err
	}
	c.outputs.put(in, prompt)
	return prompt, rev, nil
}

// build assembles the prompt of one revision for in.
func (c *compiled) build(in Input) (string, error) {
	var b strings.Builder
	switch in.Role {
	case RoleMain:
		b.Grow(len(c.mainPrefix) + len(c.policySection) + envSize(c, in.Environment))
		b.WriteString(c.mainPrefix)
		writeEnvironment(&b, c, in.Environment)
		b.WriteString(c.policySection)
	case RoleExecutor:
		n := len(c.executorPrefix) + envSize(c, in.Environment) + 512
		for _, f := range in.AgentsMD {
			n += len(f.Path) + len(f.Text) + 8
		}
		for _, r := range in.InferredRules {
			n += len(r.ID) + len(r.Name) + len(r.Instruction) + 8
		}
		b.Grow(n)
		b.WriteString(c.executorPrefix)
		writeAgentsMD(&b, in.AgentsMD)
		writeEnvironment(&b, c, in.Environment)
		if len(in.InferredRules) > 0 {
			writeInferred(&b, in.InferredRules)
		}
	default:
		return "", errUnknownRole(in.Role)
	}
	// Every part ends with a blank line; the prompt ends with one newline.
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func errUnknownRole(r Role) error { return fmt.Errorf("assembling a prompt: unknown role %q", r) }

func envSize(c *compiled, vars []Var) int {
	n := len(c.text(KeyEnvironment)) + 16
	for _, v := range vars {
		n += len(v.Name) + len(v.Value) + 8
	}
	return n
}

const sep = "\n\n"

// partText is text as writePart writes it.
func partText(text string) string {
	var b strings.Builder
	writePart(&b, text)
	return b.String()
}

func writePart(b *strings.Builder, text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	b.WriteString(text)
	b.WriteString(sep)
}

// writeEnvironment fills {variables} with one "- name: value" line per Var,
// writing straight into b: this runs on every model request.
func writeEnvironment(b *strings.Builder, c *compiled, vars []Var) {
	b.WriteString(c.envBefore)
	for i, v := range vars {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("- ")
		b.WriteString(v.Name)
		b.WriteString(": ")
		value := strings.TrimSpace(v.Value)
		if strings.Contains(value, "\n") {
			value = strings.ReplaceAll(value, "\n", "\n  ")
		}
		b.WriteString(value)
	}
	if len(vars) == 0 {
		b.WriteString("- (none)")
	}
	b.WriteString(c.envAfter)
	b.WriteString(sep)
}

// agentsHeading opens the AGENTS.md chain in an Executor's prompt.
const agentsHeading = "# Repository instructions (AGENTS.md)\n\n" +
	"The repository's own instructions for agents, outermost first; a deeper file refines the ones above it for its directory. They rank with the team sections: the instructions above and the host's checks prevail." +
	sep

func writeAgentsMD(b *strings.Builder, files []AgentsFile) {
	if len(files) == 0 {
		return
	}
	b.WriteString(agentsHeading)
	for _, f := range files {
		writeAgentsFile(b, f)
	}
}

func writeAgentsFile(b *strings.Builder, f AgentsFile) {
	b.WriteString("## ")
	b.WriteString(f.Path)
	b.WriteString(sep)
	writePart(b, f.Text)
}

func writeInferred(b *strings.Builder, rules []policy.Rule) {
	b.WriteString("# Inferred Ticket\n\n")
	b.WriteString("Nobody asked for this Ticket: the policy admitted it under the rules below. Stay within what they describe, in process and in communication; anything beyond them needs a person's explicit request, so report it or hand it back instead of doing it.\n\n")
	b.WriteString(policy.RuleLines(rules))
	b.WriteString(sep)
}

// compiled is one revision made ready for assembly: its configuration, the
// effective text of every part and the part of each role's prompt that
// depends on nothing but the revision.
type compiled struct {
	revision       int64
	settings       Settings
	texts          map[string]string
	origins        map[string]PartOrigin
	mainPrefix     string
	executorPrefix string
	// mainSegments and executorSegments are the prefixes' parts, with
	// where each comes from.
	mainSegments, executorSegments []Segment
	// policySection depends on nothing but the revision either; it is
	// rendered once and still sits last in the main Session's prompt.
	policySection string
	policySegment Segment
	// envBefore and envAfter surround {variables} in the Environment
	// template.
	envBefore, envAfter string
	// outputs keeps the prompts recently built from this revision: a Session
	// asks again with the same input for every model request.
	outputs outputCache
}

func (c *compiled) text(key string) string { return c.texts[key] }

// maxCached bounds the revisions kept compiled; sessions read the latest,
// so a few are plenty.
const maxCached = 4

// compiled returns revision rev ready for assembly, from the cache or the
// database. A revision never changes once written, so caching by revision
// needs no invalidation: a save makes a new head, which the next call reads.
func (s *Service) compiled(ctx context.Context, rev int64) (*compiled, error) {
	s.cacheMu.Lock()
	c, ok := s.cache[rev]
	s.cacheMu.Unlock()
	if ok {
		return c, nil
	}
	v, err := s.Version(ctx, rev)
	if err != nil {
		return nil, err
	}
	c = s.compile(rev, v.Settings)
	s.remember(c)
	return c, nil
}

func (s *Service) remember(c *compiled) {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	if len(s.cache) >= maxCached {
		oldest := c.revision
		for rev := range s.cache {
			if rev < oldest {
				oldest = rev
			}
		}
		if oldest == c.revision {
			return
		}
		delete(s.cache, oldest)
	}
	s.cache[c.revision] = c
}

func (s *Service) compile(rev int64, settings Settings) *compiled {
	return compileWith(rev, settings, s.reg.keys, s.reg.Text)
}

// compileWith makes a revision ready for assembly with the built-in texts
// builtin gives for keys: this release's, or for a rebuild those a
// recorded prompt was assembled with.
func compileWith(rev int64, settings Settings, keys []string, builtin func(key string) string) *compiled {
	c := &compiled{revision: rev, settings: settings, texts: make(map[string]string, len(keys)),
		origins: make(map[string]PartOrigin, len(keys)), outputs: newOutputCache()}
	for _, key := range keys {
		if o, ok := settings.Overrides[key]; ok {
			c.texts[key], c.origins[key] = o.Text, OriginOverride
		} else {
			c.texts[key], c.origins[key] = builtin(key), OriginBuiltin
		}
	}
	team := Segment{Key: "sections", Origin: OriginTeam, Text: teamSections(settings)}

	part := func(key string) Segment { return c.segment(key, c.texts[key]) }
	c.mainSegments = nonEmpty(part(KeyShared), part(KeyOrchestrator), team, part(KeySubscriptions), part(KeyReplies),
		part(KeyDispatch), part(KeyAdmission), part(KeyHandoffOrchestrator))
	c.mainPrefix = joinSegments(c.mainSegments)
	policyText := policy.Render(c.texts[KeyPolicy], c.texts[KeyPolicyNone], rev, settings.Policy)
	c.policySegment = Segment{Key: KeyPolicy, Origin: OriginGenerated, Template: c.origins[KeyPolicy], Text: partText(policyText)}
	c.policySection = c.policySegment.Text
	c.envBefore, c.envAfter, _ = strings.Cut(strings.TrimSpace(c.texts[KeyEnvironment]), "{variables}")

	c.executorSegments = nonEmpty(part(KeyShared), part(KeyWorker), team, part(KeySubscriptions), part(KeyReplies),
		part(KeyWork), part(KeyHandoffWorker), part(KeyCoding))
	c.executorPrefix = joinSegments(c.executorSegments)
	return c
}

// segment is key's text as writePart writes it, with its origin.
func (c *compiled) segment(key, text string) Segment {
	var b strings.Builder
	writePart(&b, text)
	return Segment{Key: key, Origin: c.origins[key], Text: b.String()}
}

// teamSections renders the three team sections under the headings the
// built-in texts refer to, each followed by the settings the host enforces,
// and the index of team skills.
func teamSections(s Settings) string {
	var b strings.Builder
	section := func(heading, text string, facts []string) {
		b.WriteString("# " + heading + sep)
		if t := strings.TrimSpace(text); t != "" {
			b.WriteString(t + sep)
		} else {
			b.WriteString("The team has not written this section; follow the built-in instructions." + sep)
		}
		if len(facts) > 0 {
			b.WriteString("Settings the host enforces:\n\n")
			for _, f := range facts {
				b.WriteString("- " + f + "\n")
			}
			b.WriteString("\n")
		}
	}

	c := s.Sections.Communication
	commFacts := []string{fmt.Sprintf("The host begins every GitHub message you send with the line %q; do not write it yourself.", c.AgentLine)}
	if len(c.ReviewBots) > 0 {
		commFacts = append(commFacts, "Accounts that are review bots (automated reviewers): "+quoteList(c.ReviewBots)+".")
	}
	section("Communication", c.Text, commFacts)
	section("Ticket scope", s.Sections.TicketScope.Text, nil)

	dr := s.Sections.DeliveryRequirements
	var dFacts []string
	if am := dr.AutoMerge; am.Enabled {
		cond := "changes at most " + strconv.Itoa(am.MaxChangedLines) + " lines (added plus removed)"
		switch am.Approvals {
		case 0:
		case 1:
			cond += ", has at least 1 approving review"
		default:
			cond += ", has at least " + strconv.Itoa(am.Approvals) + " approving reviews"
		}
		if len(am.Checks) > 0 {
			cond += " and these checks pass: " + quoteList(am.Checks)
		} else {
			cond += " and every check on its head commit is green"
		}
		dFacts = append(dFacts, "Auto-merge is allowed only when a pull request "+cond+"; `pr_merge` checks this condition.")
	} else {
		dFacts = append(dFacts, "Auto-merge is off: never merge; a person merges.")
	}
	if ca := dr.CommitAuthor; ca.Name != "" {
		dFacts = append(dFacts, "Commits are authored as "+ca.Name+" <"+ca.Email+">.")
	} else {
		dFacts = append(dFacts, "Commits are authored as the GitHub App's bot account with its no-reply address.")
	}
	section("Delivery requirements", dr.Text, dFacts)

	if len(s.Skills) > 0 {
		b.WriteString("# Team skills" + sep)
		b.WriteString("Load these with `skill_load` when the work touches their subject: " + quoteList(sortedKeys(s.Skills)) + "." + sep)
	}
	return b.String()
}

func quoteList(items []string) string {
	q := make([]string, len(items))
	for i, it := range items {
		q[i] = "`" + it + "`"
	}
	return strings.Join(q, ", ")
}
