package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os/user"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/migrations"
	"github.com/superagent-dev/superagent/promptparts"
)

const promptsUsage = `Usage:
  superagent prompts export DIR              write the latest configuration to DIR
  superagent prompts import [-base N] DIR    save DIR as one new version (base: DIR's manifest revision)
  superagent prompts diff DIR                compare DIR with the latest revision
  superagent prompts diff -from A -to B      compare two revisions
`

// promptsCommand runs `superagent prompts …` and returns the exit code.
func promptsCommand(ctx context.Context, cfg *config, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, promptsUsage)
		return 2
	}
	fs := flag.NewFlagSet("prompts "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.Int64("base", -1, "base revision for import (default: the revision in DIR's manifest)")
	from := fs.Int64("from", -1, "first revision for diff")
	to := fs.Int64("to", -1, "second revision for diff")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	dir := fs.Arg(0)
	needsDir := args[0] != "diff" || *from < 0
	if (needsDir && fs.NArg() != 1) || (!needsDir && (fs.NArg() != 0 || *to < 0)) {
		fmt.Fprint(stderr, promptsUsage)
		return 2
	}

	err := withPrompts(ctx, cfg, stderr, func(svc *promptparts.Service) error {
		switch args[0] {
		case "export":
			rev, err := svc.Export(ctx, dir)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "exported revision %d to %s\n", rev, dir)
		case "import":
			res, err := svc.Import(ctx, dir, *base, cliActor())
			if err != nil {
				return err
			}
			if res.Unchanged {
				fmt.Fprintf(stdout, "nothing changed; the latest revision is still %d\n", res.Revision)
			} else {
				fmt.Fprintf(stdout, "saved revision %d\n", res.Revision)
			}
		case "diff":
			var d promptparts.Diff
			var err error
			if needsDir {
				d, err = svc.DiffDir(ctx, dir)
			} else {
				d, err = svc.DiffRevisions(ctx, *from, *to)
			}
			if err != nil {
				return err
			}
			fmt.Fprint(stdout, d.Text())
		default:
			return fmt.Errorf("unknown prompts command %q", args[0])
		}
		return nil
	})
	if err == nil {
		return 0
	}
	var verr *promptparts.ValidationError
	if errors.As(err, &verr) {
		fmt.Fprintln(stderr, "superagent: the configuration is invalid:")
		for _, p := range verr.Problems {
			fmt.Fprintf(stderr, "  %s: %s\n", p.Key, p.Message)
		}
		return 1
	}
	fmt.Fprintln(stderr, "superagent:", err)
	return 1
}

func withPrompts(ctx context.Context, cfg *config, stderr io.Writer, fn func(*promptparts.Service) error) error {
	d, err := db.Open(ctx, cfg.DatabaseURL, db.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	if err := migrations.Apply(ctx, d, newLogger(stderr, cfg, slog.LevelWarn)); err != nil {
		return err
	}
	svc, err := promptparts.New(promptparts.Config{}, d)
	if err != nil {
		return err
	}
	if err := svc.Start(ctx); err != nil {
		return err
	}
	defer svc.Stop()
	return fn(svc)
}

func cliActor() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "cli:" + u.Username
	}
	return "cli"
}
