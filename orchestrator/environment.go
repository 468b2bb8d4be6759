package orchestrator

import (
	"context"
	"fmt"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/session"
)

// EnvSource returns Environment lines that change while the process runs
// (the installed repositories); PromptSource reads it for every model
// request, so a repository installed a minute ago is known on the next one.
type EnvSource func(ctx context.Context) ([]promptparts.Var, error)

// PromptSource assembles the main Session's system prompt from the latest
// revision for every model request, with the deployment-wide environment
// followed by the lines each of more returns at that moment.
func PromptSource(p *promptparts.Service, env []promptparts.Var, more ...EnvSource) session.PromptSource {
	return session.PromptFunc(func(ctx context.Context, _ *session.Session) (string, int64, error) {
		vars := env
		if len(more) > 0 {
			vars = append([]promptparts.Var(nil), env...)
			for _, src := range more {
				vs, err := src(ctx)
				if err != nil {
					return "", 0, fmt.Errorf("reading the main Session's environment: %w", err)
				}
				vars = append(vars, vs...)
			}
		}
		return p.Assemble(ctx, promptparts.Input{Role: promptparts.RoleMain, Environment: vars})
	})
}

// maxDescription bounds one repository's description in the prompt and in
// orchestrator_read: a description is outside text, and long ones crowd out
// the rest.
const maxDescription = 200

// Repositories is an EnvSource with one line listing up to limit (default
// 50) installed repositories with their default branch and description;
// when more are installed it says how many were left out and how to search
// them (orchestrator_read what=repos).
func Repositories(q db.Querier, limit int) EnvSource {
	if limit <= 0 {
		limit = 50
	}
	return func(ctx context.Context) ([]promptparts.Var, error) {
		repos, more, err := githubapp.Repositories(ctx, q, "", limit)
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		if len(repos) == 0 {
			b.WriteString("(none: the GitHub App is not installed on any repository)")
		}
		for i, r := range repos {
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(repoLine(r))
		}
		if more {
			b.WriteString("\n… more are installed: search them with orchestrator_read what=repos search=<part of the name>")
		}
		return []promptparts.Var{{Name: "installed repositories", Value: b.String()}}, nil
	}
}

// repoLine is one repository on one line: name, default branch,
// description.
func repoLine(r githubapp.Repository) string {
	line := r.FullName
	if r.DefaultBranch != "" {
		line += " (default branch " + r.DefaultBranch + ")"
	}
	if d := clip(r.Description, maxDescription); d != "" {
		line += ": " + d
	}
	return line
}

// clip folds s onto one line of at most n runes.
func clip(s string, n int) string {
	s = oneLine(s)
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}
