package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os/user"
	"strconv"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/migrations"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/promptparts/trial"
	"github.com/superagent-dev/superagent/session"
)

const promptsUsage = `Usage:
  superagent prompts export [-force] [-defaults] DIR
                                             write the latest configuration to DIR
                                             (-force: replace an earlier export in a non-empty DIR;
                                             -defaults: also write every part not overridden, with
                                             today's default text, to edit)
  superagent prompts import [-base N] DIR    save DIR as one new version (base: DIR's manifest
                                             revision); nothing is saved when DIR holds the latest;
                                             DIR's manifest then names the revision saved
  superagent prompts diff DIR                unified diff from the latest revision to DIR
  superagent prompts diff -from A -to B      unified diff between two revisions
  superagent prompts try -dir DIR (-request ID,… | -last N [-role executor|main]) [-no-model]
                                             what recorded model requests would have read (and,
                                             with a model configured, answered) under the draft
                                             in DIR; writes nothing

diff exits 0 when there is no difference, 1 when there is, 2 on an error.
`

// errUsage is a command line that does not parse; the usage is printed.
var errUsage = errors.New("usage")

// promptsCommand runs `superagent prompts …` and returns the exit code.
func promptsCommand(ctx context.Context, cfg *config, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, promptsUsage)
		return 2
	}
	var code int
	var err error
	switch args[0] {
	case "export", "import":
		err = promptsSave(ctx, cfg, args[0], args[1:], stdout, stderr)
	case "diff":
		code, err = promptsDiff(ctx, cfg, args[1:], stdout, stderr)
	case "try":
		err = promptsTry(ctx, cfg, args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "superagent: unknown prompts command %q\n\n%s", args[0], promptsUsage)
		return 2
	}
	var verr *promptparts.ValidationError
	switch {
	case errors.Is(err, errUsage):
		fmt.Fprint(stderr, promptsUsage)
		return 2
	case errors.As(err, &verr):
		fmt.Fprintln(stderr, "superagent: the configuration is invalid:")
		for _, p := range verr.Problems {
			fmt.Fprintf(stderr, "  %s: %s\n", p.Key, p.Message)
		}
	case err != nil:
		fmt.Fprintln(stderr, "superagent:", err)
	default:
		return code
	}
	// diff reserves 1 for "there are differences".
	if args[0] == "diff" {
		return 2
	}
	return 1
}

func flags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("prompts "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func promptsSave(ctx context.Context, cfg *config, name string, args []string, stdout, stderr io.Writer) error {
	fs := flags(name, stderr)
	base := fs.Int64("base", -1, "base revision for import (default: the revision in DIR's manifest)")
	force := fs.Bool("force", false, "export into a non-empty DIR, replacing an earlier export there")
	defaults := fs.Bool("defaults", false, "export: also write every part that is not overridden, with today's default text")
	if fs.Parse(args) != nil || fs.NArg() != 1 {
		return errUsage
	}
	dir := fs.Arg(0)
	return withPrompts(ctx, cfg, stderr, func(_ *db.DB, svc *promptparts.Service) error {
		if name == "export" {
			rev, err := svc.Export(ctx, dir, promptparts.ExportOptions{Force: *force, Defaults: *defaults})
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "exported revision %d to %s\n", rev, dir)
			if !*defaults {
				if v, err := svc.Latest(ctx); err == nil && len(v.Settings.Overrides) == 0 {
					fmt.Fprintln(stdout, "no part is overridden, so parts/ is empty; -defaults writes today's default texts there to edit")
				}
			}
			return nil
		}
		res, err := svc.Import(ctx, dir, *base, cliActor())
		if err != nil {
			return err
		}
		if res.Unchanged {
			fmt.Fprintf(stdout, "nothing changed; the latest revision is still %d\n", res.Revision)
		} else {
			fmt.Fprintf(stdout, "saved revision %d\n", res.Revision)
		}
		return nil
	})
}

// promptsDiff prints unified diffs; its code is 1 when there are any.
func promptsDiff(ctx context.Context, cfg *config, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flags("diff", stderr)
	from := fs.Int64("from", -1, "first revision")
	to := fs.Int64("to", -1, "second revision")
	if fs.Parse(args) != nil {
		return 0, errUsage
	}
	revisions := *from >= 0 || *to >= 0
	if (revisions && (fs.NArg() != 0 || *from < 0 || *to < 0)) || (!revisions && fs.NArg() != 1) {
		return 0, errUsage
	}
	code := 0
	err := withPrompts(ctx, cfg, stderr, func(_ *db.DB, svc *promptparts.Service) error {
		var (
			d        promptparts.Diff
			err      error
			fromName string
			toName   string
		)
		if revisions {
			d, err = svc.DiffRevisions(ctx, *from, *to)
			fromName, toName = fmt.Sprintf("revision %d", *from), fmt.Sprintf("revision %d", *to)
		} else {
			d, err = svc.DiffDir(ctx, fs.Arg(0))
			fromName, toName = fmt.Sprintf("revision %d", d.From), fs.Arg(0)
		}
		if err != nil {
			return err
		}
		fmt.Fprint(stdout, d.Unified(fromName, toName))
		if len(d.Changes) > 0 {
			code = 1
		}
		return nil
	})
	return code, err
}

func promptsTry(ctx context.Context, cfg *config, args []string, stdout, stderr io.Writer) error {
	fs := flags("try", stderr)
	dir := fs.String("dir", "", "the draft: a directory as prompts export writes it")
	requests := fs.String("request", "", "the model requests to try, by id, comma-separated")
	last := fs.Int("last", 0, "try the latest N model requests of -role")
	role := fs.String("role", string(session.RoleExecutor), "with -last: executor or main")
	noModel := fs.Bool("no-model", false, "show the prompt diffs only; send nothing to a model")
	if fs.Parse(args) != nil || fs.NArg() != 0 || *dir == "" || (*requests == "") == (*last <= 0) ||
		(*role != string(session.RoleExecutor) && *role != string(session.RoleMain)) {
		return errUsage
	}
	var ids []int64
	for _, f := range strings.Split(*requests, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		id, err := strconv.ParseInt(f, 10, 64)
		if err != nil || id <= 0 {
			return fmt.Errorf("-request: %q is not a model request id", f)
		}
		ids = append(ids, id)
	}
	tcfg := trial.Config{Scrubber: cfg.scrub, Models: map[session.Role]trial.Model{}}
	if !*noModel {
		for r, m := range map[session.Role]roleModel{session.RoleExecutor: cfg.ExecutorModel, session.RoleMain: cfg.Router} {
			if m.Model == "" {
				continue
			}
			c, err := m.client()
			if err != nil {
				return err
			}
			tcfg.Models[r] = c
		}
	}
	return openPrompts(ctx, cfg, stderr, false, func(d *db.DB, svc *promptparts.Service) error {
		draft, err := svc.DraftFromDir(ctx, *dir)
		if err != nil {
			return err
		}
		tr := trial.New(tcfg, d, svc, session.NewStore(d, cfg.scrub, nil))
		ids, err := tr.Select(ctx, ids, *last, session.Role(*role))
		if err != nil {
			return err
		}
		results, err := tr.Run(ctx, draft, ids)
		if err != nil {
			return err
		}
		for _, r := range results {
			writeTrial(stdout, r, *dir, tr.HasModel(r.Role))
		}
		return nil
	})
}

// writeTrial prints one tried request: its prompt diff and both answers.
func writeTrial(w io.Writer, r trial.Result, dir string, model bool) {
	q := r.Request
	fmt.Fprintf(w, "=== request %d: %s Session %d", q.ID, r.Role, q.SessionID)
	if r.TicketID != 0 {
		fmt.Fprintf(w, " (Ticket %d)", r.TicketID)
	}
	fmt.Fprintf(w, ", revision %d, %s, %s\n", q.PromptRevision, q.Purpose, q.CreatedAt.UTC().Format("2006-01-02 15:04:05Z"))
	if r.Problem != "" {
		fmt.Fprintf(w, "not tried: %s\n\n", r.Problem)
		return
	}
	switch r.Prompt.Diff {
	case "":
		fmt.Fprintln(w, "prompt: the draft gives this request the prompt it had")
	default:
		if !r.PromptVerified {
			fmt.Fprintln(w, "# the rebuilt prompt does not match the hash recorded with the request: the left side may differ from what was sent")
		}
		fmt.Fprint(w, promptparts.Diff{Changes: []promptparts.Change{r.Prompt}}.Unified(fmt.Sprintf("request %d", q.ID), "draft "+dir))
	}
	writeAnswer(w, "recorded", r.Recorded)
	switch {
	case r.Draft != nil:
		writeAnswer(w, "draft", *r.Draft)
	case r.DraftError != "":
		fmt.Fprintf(w, "draft: not answered: %s\n", r.DraftError)
	case !model:
		fmt.Fprintf(w, "draft: not sent (no model configured for the %s role, or -no-model)\n", r.Role)
	}
	fmt.Fprintln(w)
}

func writeAnswer(w io.Writer, label string, a trial.Answer) {
	u := a.Usage
	fmt.Fprintf(w, "%s answer (%s, %s): %d input, %d cached, %d output tokens, cost %.6f\n",
		label, a.Model, a.FinishReason, u.Input, u.CacheRead, u.Output, u.Cost)
	for _, line := range strings.Split(strings.TrimRight(a.Content, "\n"), "\n") {
		if line != "" || a.Content != "" {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	for _, c := range a.ToolCalls {
		fmt.Fprintf(w, "  tool call %s %s\n", c.Name, c.Arguments)
	}
}

// withPrompts opens and migrates the database and runs fn with the prompt
// service. The service is started (this release's built-in texts stored)
// except for try, which writes nothing.
func withPrompts(ctx context.Context, cfg *config, stderr io.Writer, fn func(*db.DB, *promptparts.Service) error) error {
	return openPrompts(ctx, cfg, stderr, true, fn)
}

func openPrompts(ctx context.Context, cfg *config, stderr io.Writer, start bool, fn func(*db.DB, *promptparts.Service) error) error {
	d, err := db.Open(ctx, cfg.DatabaseURL, db.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	if err := migrations.Apply(ctx, d, newLogger(stderr, cfg, slog.LevelWarn)); err != nil {
		return err
	}
	svc, err := promptparts.New(promptparts.Config{Version: buildVersion()}, d)
	if err != nil {
		return err
	}
	if start {
		if err := svc.Start(ctx); err != nil {
			return err
		}
	}
	defer svc.Stop()
	return fn(d, svc)
}

func cliActor() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "cli:" + u.Username
	}
	return "cli"
}
