package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/superagent-dev/superagent/executor/repoenv"
	"github.com/superagent-dev/superagent/executor/workspace"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/tickets"
)

// setUp makes the repository's setup cache ready before the Session's next
// step: the repository's .superagent/setup.sh on its default branch, else
// the team's default script, runs once per repository and script on this
// machine; later Tickets reuse its cache. A failure is reported to the
// Session (and shown on the Ticket page) and is not fatal; it is not tried
// again for the same Ticket and script.
func (e *Executor) setUp(ctx context.Context, t tickets.Ticket, sid int64) error {
	note, err := e.runSetup(ctx, t, sid)
	if err != nil || note == "" {
		return err
	}
	_, err = e.sessions.Append(ctx, e.deps.DB, sid, note)
	return err
}

// runSetup runs the setup setUp describes and returns what the Session
// must be told of a failure ("" when there is nothing to tell).
func (e *Executor) runSetup(ctx context.Context, t tickets.Ticket, sid int64) (string, error) {
	ws, err := e.deps.Workspaces.Open(t.ID)
	if err != nil {
		return "", err
	}
	script, source, tooBig, err := e.setupScript(ctx, ws)
	if err != nil || script == nil {
		return "", err
	}
	hash := workspace.ScriptHash(script)
	prev, had, err := e.deps.RepoEnv.Ticket(ctx, e.deps.DB, t.ID)
	if err != nil {
		return "", err
	}
	if had && prev.ScriptSHA256 == hash && (!prev.OK || ws.SetupCache(t.Repo) != "") {
		return "", nil
	}
	o := repoenv.Outcome{TicketID: t.ID, Source: source, ScriptSHA256: hash, ExitCode: -1}
	var key, base string
	var locks []string
	if tooBig != nil {
		o.Tail = tooBig.Error()
	} else {
		env, _ := e.secretEnv(ctx, t)
		res, err := ws.Setup(ctx, t.Repo, script, env)
		if err != nil {
			return "", fmt.Errorf("setting up ticket %d: %w", t.ID, err)
		}
		o.Cached, o.OK, o.ExitCode, o.TimedOut, o.OverQuota, o.Duration = res.Cached, res.OK, res.ExitCode, res.TimedOut, res.OverQuota, res.Duration
		key, base, locks = res.Key, res.BaseCommit, res.LockFiles
		o.Tail = e.deps.Scrubber.Scrub(res.Tail)
	}
	if err := e.deps.RepoEnv.Record(ctx, e.deps.DB, o); err != nil {
		return "", err
	}
	if o.Cached {
		e.cfg.Logger.Info("setup cache hit", "ticket", t.ID, "session", sid, "repo", t.Repo, "source", source, "script_sha256", hash,
			"cache_key", key, "base_commit", base)
		return "", nil
	}
	e.cfg.Logger.Info("setup ran", "ticket", t.ID, "session", sid, "repo", t.Repo, "source", source, "script_sha256", hash,
		"cache_key", key, "base_commit", base, "lock_files", strings.Join(locks, ","),
		"ok", o.OK, "exit_code", o.ExitCode, "timed_out", o.TimedOut, "over_quota", o.OverQuota, "duration", o.Duration)
	if o.OK {
		return "", nil
	}
	return fmt.Sprintf("host: %s. Commands run without its cache (no /cache); "+
		"set up what you need yourself if you can, and say so in your report. The end of its output:\n```\n%s\n```",
		o.Describe(), strings.ReplaceAll(o.Tail, "```", "'''")), nil
}

// setupScript returns the setup script of the Ticket's repository and
// where it came from, or nil when there is none. A repository script over
// the size limit is returned (empty) with tooBig set, to be reported.
func (e *Executor) setupScript(ctx context.Context, ws *workspace.Workspace) (script []byte, source string, tooBig, err error) {
	data, ok, err := ws.BaseFile(ctx, workspace.SetupScriptPath, workspace.MaxSetupScript)
	switch {
	case errors.Is(err, workspace.ErrTooLarge):
		return []byte{}, repoenv.SourceRepository, err, nil
	case err != nil:
		return nil, "", nil, err
	case ok:
		return data, repoenv.SourceRepository, nil, nil
	}
	d, err := e.deps.RepoEnv.Default(ctx, e.deps.DB)
	if err != nil || d.Script == "" {
		return nil, "", nil, err
	}
	return []byte(d.Script), repoenv.SourceDefault, nil, nil
}

// secretEnv opens the repository's secrets for a command and teaches the
// Scrubber their values first, so no output, transcript or log keeps
// them. Secrets that cannot be opened are left out (and logged).
func (e *Executor) secretEnv(ctx context.Context, t tickets.Ticket) ([]string, []string) {
	env, values, err := e.deps.RepoEnv.SecretEnv(ctx, e.deps.DB, t.Repo)
	if err != nil {
		e.cfg.Logger.Warn("running commands without the repository's secrets", "ticket", t.ID, "repo", t.Repo, "error", err)
		return nil, nil
	}
	e.deps.Scrubber.Add(values...)
	return env, values
}

// commandWorkspace is ws as the Ticket's commands see it: with the
// repository's secrets in their environment and its setup cache, when
// setup succeeded, read-only at /cache.
func (e *Executor) commandWorkspace(ctx context.Context, ws *workspace.Workspace, t tickets.Ticket) (*workspace.Workspace, error) {
	env, _ := e.secretEnv(ctx, t)
	cache := ""
	o, ok, err := e.deps.RepoEnv.Ticket(ctx, e.deps.DB, t.ID)
	if err != nil {
		return nil, err
	}
	if ok && o.OK {
		cache = ws.SetupCache(t.Repo)
	}
	if cache == "" && len(env) == 0 {
		return ws, nil
	}
	return ws.With(cache, env), nil
}

// setupFacts are the Environment facts of the Ticket's setup and secrets.
func (e *Executor) setupFacts(ctx context.Context, t tickets.Ticket) ([]promptparts.Var, error) {
	if t.Repo == "" {
		return nil, nil
	}
	var vars []promptparts.Var
	o, ok, err := e.deps.RepoEnv.Ticket(ctx, e.deps.DB, t.ID)
	if err != nil {
		return nil, err
	}
	if ok {
		v := o.Describe()
		if o.OK {
			v += "; its cache is read-only at /cache (GOPATH, CARGO_HOME, npm_config_prefix and PYTHONUSERBASE point into it, and its bin directories are on PATH after the system's), and the build caches it warmed start the Ticket's own at /build-cache"
		} else {
			v += "; the end of its output is in the conversation"
		}
		vars = append(vars, promptparts.Var{Name: "Setup", Value: v})
	}
	secrets, err := e.deps.RepoEnv.Secrets(ctx, e.deps.DB, t.Repo)
	if err != nil {
		return nil, err
	}
	if len(secrets) > 0 {
		names := make([]string, len(secrets))
		for i, s := range secrets {
			names[i] = s.Name
		}
		vars = append(vars, promptparts.Var{Name: "Secrets", Value: strings.Join(names, ", ") +
			" (in every command's environment for the repository's tests; their values are redacted from all output; never write them to a file or a commit)"})
	}
	return vars, nil
}
