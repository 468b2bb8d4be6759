package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/policy"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/tickets"
)

// promptInput gathers what the prompt of a Ticket's Executor needs.
func (e *Executor) promptInput(ctx context.Context, ticketID int64) (promptparts.Input, error) {
	t, err := e.deps.Tickets.Ticket(ctx, e.deps.DB, ticketID)
	if err != nil {
		return promptparts.Input{}, fmt.Errorf("reading the ticket of an executor prompt: %w", err)
	}
	in := promptparts.Input{Role: promptparts.RoleExecutor, Environment: e.environment(t)}
	facts, err := e.setupFacts(ctx, t)
	if err != nil {
		return promptparts.Input{}, err
	}
	in.Environment = append(in.Environment, facts...)
	repos, err := e.repoFacts(ctx, t)
	if err != nil {
		return promptparts.Input{}, err
	}
	in.Environment = append(in.Environment, repos...)
	if ws, err := e.deps.Workspaces.Open(t.ID); err == nil {
		dirs, err := e.workedDirs(ctx, t.ID)
		if err != nil {
			return promptparts.Input{}, err
		}
		// An entry that cannot be read is left out of the prompt, not a
		// reason to fail it: the Ticket would be stuck on every request.
		files, skipped := ws.AgentsChain(dirs)
		if skipped != nil {
			e.cfg.Logger.Warn("leaving AGENTS.md files out of the prompt", "ticket", t.ID, "error", skipped)
		}
		for _, f := range files {
			in.AgentsMD = append(in.AgentsMD, promptparts.AgentsFile{Path: f.Path, Text: f.Text})
		}
	}
	if t.Origin == tickets.OriginInferred {
		settings, _, err := e.deps.Prompts.Current(ctx)
		if err != nil {
			return promptparts.Input{}, fmt.Errorf("reading the policy: %w", err)
		}
		in.InferredRules = []policy.Rule{}
		for _, id := range t.Rules {
			if r, ok := settings.Policy.Rule(id); ok {
				in.InferredRules = append(in.InferredRules, r)
			}
		}
	}
	return in, nil
}

// environment lists the Ticket's facts after the deployment's.
func (e *Executor) environment(t tickets.Ticket) []promptparts.Var {
	vars := append([]promptparts.Var(nil), e.cfg.Environment...)
	add := func(name, value string) {
		if value != "" {
			vars = append(vars, promptparts.Var{Name: name, Value: value})
		}
	}
	add("Ticket", strconv.FormatInt(t.ID, 10)+": "+t.Title)
	add("Origin", t.Origin)
	add("Repository", t.Repo)
	if t.Repo == "" {
		add("Repository", "none yet: no workspace, and nothing to write to on GitHub until a person names one and repository_set sets it")
	}
	if _, ok := e.localRemote(t.Repo); ok {
		add("Run", localNote)
	}
	if t.Repo != "" {
		add("Branch", e.workBranch(t))
		add("Workspace", "a clone of "+t.Repo+" at "+workspaceMount+" (commands run there, isolated, without network unless configured)")
	}
	if t.PullNumber > 0 {
		pr := t.Repo + "#" + strconv.Itoa(t.PullNumber)
		if e.onTheirs(t) {
			pr += " (a person's: push to its branch; only they mark it ready, close or merge it)"
		}
		add("Pull request", pr)
	}
	mandate, _ := json.Marshal(t.Mandate)
	add("Mandate", string(mandate))
	if t.Pause != nil {
		add("Paused", "by "+t.Pause.By+"; do nothing until a person resumes")
	}
	if len(t.Rules) > 0 {
		add("Admitted by rules", strings.Join(t.Rules, ", "))
	}
	return vars
}

// maxRepoFacts bounds the installed repositories a Ticket without one is
// shown (and the ones repository_set looks a name up among).
const maxRepoFacts = 30

// repoFacts lists, for a Ticket without a repository, the repositories
// the App is installed on, one a line, so the Executor can ask which one
// is meant in their own names. Descriptions are outside text, cut short.
func (e *Executor) repoFacts(ctx context.Context, t tickets.Ticket) ([]promptparts.Var, error) {
	if t.Repo != "" {
		return nil, nil
	}
	repos, more, err := githubapp.Repositories(ctx, e.deps.DB, "", maxRepoFacts)
	if err != nil {
		return nil, err
	}
	lines := make([]string, 0, len(repos)+1)
	for _, r := range repos {
		line := r.FullName
		if d := strings.Join(strings.Fields(r.Description), " "); d != "" {
			if len([]rune(d)) > 120 {
				d = string([]rune(d)[:120]) + "…"
			}
			line += ": " + d
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		lines = append(lines, "(none: the GitHub App is not installed on any repository)")
	}
	if more {
		lines = append(lines, fmt.Sprintf("… more than %d; a person's answer may name another", maxRepoFacts))
	}
	return []promptparts.Var{{Name: "Installed repositories", Value: strings.Join(lines, "\n")}}, nil
}

// workspaceMount is where the sandbox shows the workspace to commands.
const workspaceMount = "/workspace"
