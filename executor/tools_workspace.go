package executor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/superagent-dev/superagent/executor/workspace"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// workspace opens the Ticket's workspace, preparing it when it is gone.
func (e *Executor) workspace(ctx context.Context, ticketID int64) (*workspace.Workspace, tickets.Ticket, error) {
	t, err := e.deps.Tickets.Ticket(ctx, e.deps.DB, ticketID)
	if err != nil {
		return nil, t, err
	}
	if t.Repo == "" {
		return nil, t, session.Refuse("%s", errNoRepo)
	}
	ws, err := e.deps.Workspaces.Open(ticketID)
	if errors.Is(err, fs.ErrNotExist) {
		ws, _, err = e.prepare(ctx, t)
	}
	return ws, t, err
}

// inWorkspace adapts a workspace tool: the Ticket's workspace is opened
// (prepared again if it is gone) before fn runs.
func inWorkspace[A any](e *Executor, fn func(context.Context, *workspace.Workspace, tickets.Ticket, A) (string, error)) func(context.Context, session.Call, A) (string, error) {
	return func(ctx context.Context, call session.Call, a A) (string, error) {
		ws, t, err := e.workspace(ctx, call.TicketID)
		if err != nil {
			return "", err
		}
		return fn(ctx, ws, t, a)
	}
}

type runArgs struct {
	Command string `json:"command"`
	Timeout int    `json:"timeout_seconds,omitempty" jsonschema:"minimum=1,maximum=1800" jsonschema_description:"default 120"`
	Workdir string `json:"workdir,omitempty" jsonschema_description:"relative to the workspace root"`
}

func (e *Executor) runCommand(ctx context.Context, ws *workspace.Workspace, t tickets.Ticket, a runArgs) (string, error) {
	e.workedIn(ctx, t.ID, a.Workdir)
	ws, err := e.commandWorkspace(ctx, ws, t)
	if err != nil {
		return "", err
	}
	res, err := ws.Run(ctx, a.Command, a.Workdir, time.Duration(a.Timeout)*time.Second)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "exit code %d", res.ExitCode)
	if res.TimedOut {
		b.WriteString(" (timed out and killed)")
	}
	fmt.Fprintf(&b, " after %s\n", res.Duration.Round(time.Millisecond))
	b.WriteString(res.Output)
	// The repository's secrets are in the command's environment: none of
	// their values leaves here.
	return e.deps.Scrubber.Scrub(b.String()), nil
}

type readArgs struct {
	Path   string `json:"path"`
	Offset int    `json:"offset,omitempty" jsonschema:"minimum=0" jsonschema_description:"first line, 1-based"`
	Limit  int    `json:"limit,omitempty" jsonschema:"minimum=0"`
}

func (e *Executor) readFile(ctx context.Context, ws *workspace.Workspace, t tickets.Ticket, a readArgs) (string, error) {
	e.workedIn(ctx, t.ID, path.Dir(a.Path))
	return ws.ReadFile(a.Path, a.Offset, a.Limit)
}

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

func (e *Executor) writeFile(ctx context.Context, ws *workspace.Workspace, t tickets.Ticket, a writeArgs) (string, error) {
	e.workedIn(ctx, t.ID, path.Dir(a.Path))
	if err := ws.WriteFile(a.Path, a.Content); err != nil {
		return "", err
	}
	return fmt.Sprintf("wrote %s (%d bytes)", a.Path, len(a.Content)), nil
}

type editArgs struct {
	Path       string `json:"path"`
	OldText    string `json:"old_text"`
	NewText    string `json:"new_text"`
	ReplaceAll bool   `json:"replace_all,omitempty"`
}

func (e *Executor) editFile(ctx context.Context, ws *workspace.Workspace, t tickets.Ticket, a editArgs) (string, error) {
	e.workedIn(ctx, t.ID, path.Dir(a.Path))
	n, err := ws.EditFile(a.Path, a.OldText, a.NewText, a.ReplaceAll)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("replaced %d occurrence(s) in %s", n, a.Path), nil
}

type searchArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path,omitempty" jsonschema_description:"directory or file; default the root"`
}

func (e *Executor) searchCode(ctx context.Context, ws *workspace.Workspace, _ tickets.Ticket, a searchArgs) (string, error) {
	return ws.Search(ctx, a.Pattern, a.Path, 200)
}

func (e *Executor) gitStatus(ctx context.Context, ws *workspace.Workspace, _ tickets.Ticket, _ noArgs) (string, error) {
	return ws.Status(ctx)
}

type diffArgs struct {
	Staged bool `json:"staged,omitempty"`
}

func (e *Executor) gitDiff(ctx context.Context, ws *workspace.Workspace, _ tickets.Ticket, a diffArgs) (string, error) {
	out, err := ws.Diff(ctx, a.Staged)
	if err == nil && out == "" {
		return "(no changes)", nil
	}
	return out, err
}

type commitArgs struct {
	Message string   `json:"message"`
	Paths   []string `json:"paths,omitempty"`
}

func (e *Executor) gitCommit(ctx context.Context, ws *workspace.Workspace, t tickets.Ticket, a commitArgs) (string, error) {
	if strings.TrimSpace(a.Message) == "" {
		return "", session.Refuse("a commit needs a message")
	}
	author, err := e.commitAuthor(ctx, t.Repo)
	if err != nil {
		return "", err
	}
	sha, err := ws.Commit(ctx, a.Message, a.Paths, author)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("committed %s as %s <%s>", sha, author.Name, author.Email), nil
}

// mayWrite checks the Mandate: the Ticket's repository is one it names,
// and the action is one it allows there.
func mayWrite(t tickets.Ticket, action string) error {
	if t.Repo == "" {
		return errNoRepo
	}
	if !slices.ContainsFunc(t.Mandate.Repos, func(r string) bool { return strings.EqualFold(r, t.Repo) }) {
		return fmt.Errorf("the Mandate does not name %s", t.Repo)
	}
	if len(t.Mandate.Actions) > 0 && !slices.Contains(t.Mandate.Actions, action) {
		return fmt.Errorf("the Mandate does not allow %q (it allows %s)", action, strings.Join(t.Mandate.Actions, ", "))
	}
	return nil
}

// confirmed refuses substantial work until the Executor has confirmed the
// request, concretely, under it.
func (e *Executor) confirmed(ctx context.Context, ticketID int64) error {
	x, err := e.execution(ctx, e.deps.DB, ticketID)
	if err != nil {
		return err
	}
	if !x.Confirmed {
		return session.Refuse("confirm the request first: reply with purpose \"confirm\" under it (in_reply_to), naming the object and the result you expect to deliver")
	}
	return nil
}

func (e *Executor) checkPush(ctx context.Context, call session.Call, _ noArgs) error {
	t, err := e.deps.Tickets.Ticket(ctx, e.deps.DB, call.TicketID)
	if err != nil {
		return err
	}
	if tickets.IsReview(t) && !slices.Contains(t.Mandate.Actions, "branch") {
		return session.Refuse("this Ticket reviews a person's pull request and pushes nothing to their branch: put a concrete fix in a suggestion block of your review")
	}
	if err := mayWrite(t, "branch"); err != nil {
		return session.Refuse("%s", err)
	}
	if used, err := e.fixAttemptsUsedUp(ctx, t); err != nil {
		return err
	} else if used {
		return session.Refuse("the fix attempts after failed checks are used up: report blocked instead of pushing again")
	}
	return e.confirmed(ctx, call.TicketID)
}

func (e *Executor) gitPush(ctx context.Context, ws *workspace.Workspace, t tickets.Ticket, _ noArgs) (string, error) {
	head, err := ws.Head(ctx)
	if err != nil {
		return "", err
	}
	branch := e.workBranch(t)
	o := tickets.Outgoing{Key: fmt.Sprintf("push:ticket:%d:%s", t.ID, head), TicketID: t.ID, Source: tickets.SourceGitHub,
		Kind: "push", Target: t.Repo + "@" + branch, Body: head}
	// A push of the same commit again changes nothing: no find needed.
	_, err = e.write(ctx, o, func(ctx context.Context) (string, error) {
		r, err := e.workRemote(ctx, t)
		if err != nil {
			return "", err
		}
		// The repository's secrets join the Scrubber, whose every value
		// the push must not carry.
		e.secretEnv(ctx, t)
		return head, ws.Push(ctx, r, branch, e.deps.Scrubber)
	}, nil)
	if leak := (*workspace.LeakError)(nil); errors.As(err, &leak) {
		e.cfg.Logger.Warn("push refused: a secret in what it would send", "ticket", t.ID, "repo", t.Repo, "branch", branch, "file", leak.Path, "kind", leak.Kind)
		return "", session.Refuse("%s", leak)
	}
	if err != nil {
		return "", err
	}
	if t.PullNumber != 0 {
		// The pull request's head moved: its check run follows.
		e.showProgress(ctx, t.ID)
	}
	return fmt.Sprintf("pushed %s to %s on %s", head, branch, t.Repo), nil
}

// botIdentity caches the App's bot account, the default commit author.
type botIdentity struct {
	mu     sync.Mutex
	author workspace.Author
}

// commitAuthor is the team's configured commit author, or else the App's
// bot account with its no-reply address.
func (e *Executor) commitAuthor(ctx context.Context, repo string) (workspace.Author, error) {
	st, _, err := e.deps.Prompts.Current(ctx)
	if err != nil {
		return workspace.Author{}, fmt.Errorf("reading the commit author: %w", err)
	}
	if ca := st.Sections.DeliveryRequirements.CommitAuthor; ca.Name != "" && ca.Email != "" {
		return workspace.Author{Name: ca.Name, Email: ca.Email}, nil
	}
	e.bot.mu.Lock()
	defer e.bot.mu.Unlock()
	if e.bot.author.Name != "" {
		return e.bot.author, nil
	}
	if e.deps.GitHub == nil {
		return workspace.Author{Name: "superagent", Email: "superagent@localhost"}, nil
	}
	slug, err := e.deps.GitHub.Slug(ctx)
	if err != nil {
		return workspace.Author{}, err
	}
	login := slug + "[bot]"
	gh, err := e.installationClient(ctx, repo)
	if err != nil {
		return workspace.Author{}, err
	}
	u, err := gh.User(ctx, login)
	if err != nil {
		return workspace.Author{}, fmt.Errorf("reading the App's bot account %s: %w", login, err)
	}
	e.bot.author = workspace.Author{Name: login, Email: fmt.Sprintf("%d+%s@users.noreply.github.com", u.GetID(), login)}
	return e.bot.author, nil
}
