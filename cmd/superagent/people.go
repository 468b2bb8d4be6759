package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/migrations"
	"github.com/superagent-dev/superagent/people"
)

const peopleUsage = `Usage:
  superagent people export [-o FILE]   write everyone to FILE (default: standard output) as JSON
  superagent people import FILE        make the people exactly those in FILE; every problem
                                       is listed and nothing changes when there is one

The file: {"people": [{"name": "Ada Lovelace", "role": "admin",
  "github": ["ada"], "feishu_open_ids": ["ou_…"], "feishu_union_ids": ["on_…"]}]}
role is admin or member (default member). An import is recorded in the
activity log under the operating-system user who ran it.
`

// peopleFile is the people file's shape.
type peopleFile struct {
	People []filePerson `json:"people"`
}

// filePerson is a person in the file: no ids or times, which belong to
// one database.
type filePerson struct {
	Name           string   `json:"name"`
	Role           string   `json:"role,omitempty"`
	GitHub         []string `json:"github,omitempty"`
	FeishuOpenIDs  []string `json:"feishu_open_ids,omitempty"`
	FeishuUnionIDs []string `json:"feishu_union_ids,omitempty"`
}

// actionPeopleImport is the activity log's action for an import.
const actionPeopleImport = "people_import"

// peopleCommand runs `superagent people …` and returns the exit code.
func peopleCommand(ctx context.Context, cfg *config, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, peopleUsage)
		return 2
	}
	var err error
	switch {
	case args[0] == "export" && (len(args) == 1 || len(args) == 3 && args[1] == "-o"):
		out := ""
		if len(args) == 3 {
			out = args[2]
		}
		err = peopleExport(ctx, cfg, out, stdout, stderr)
	case args[0] == "import" && len(args) == 2:
		err = peopleImport(ctx, cfg, args[1], stdout, stderr)
	default:
		fmt.Fprint(stderr, peopleUsage)
		return 2
	}
	var inv *people.InvalidError
	switch {
	case errors.As(err, &inv):
		fmt.Fprintf(stderr, "superagent: %s is not a valid people file; nothing was changed:\n", args[1])
		for _, p := range inv.Problems {
			fmt.Fprintf(stderr, "  %s\n", p)
		}
		return 1
	case err != nil:
		fmt.Fprintln(stderr, "superagent:", err)
		return 1
	}
	return 0
}

func withPeople(ctx context.Context, cfg *config, stderr io.Writer, fn func(*db.DB, *people.Store) error) error {
	d, err := db.Open(ctx, cfg.DatabaseURL, db.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	if err := migrations.Apply(ctx, d, newLogger(stderr, cfg, slog.LevelWarn)); err != nil {
		return err
	}
	return fn(d, people.New(d, nil))
}

func peopleExport(ctx context.Context, cfg *config, out string, stdout, stderr io.Writer) error {
	return withPeople(ctx, cfg, stderr, func(_ *db.DB, s *people.Store) error {
		list, err := s.List(ctx)
		if err != nil {
			return err
		}
		f := peopleFile{People: []filePerson{}}
		for _, p := range list {
			f.People = append(f.People, filePerson{Name: p.Name, Role: p.Role, GitHub: p.GitHub, FeishuOpenIDs: p.FeishuOpenIDs, FeishuUnionIDs: p.FeishuUnionIDs})
		}
		b, err := json.MarshalIndent(f, "", "  ")
		if err != nil {
			return err
		}
		b = append(b, '\n')
		if out == "" {
			_, err = stdout.Write(b)
			return err
		}
		if err := os.WriteFile(out, b, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", out, err)
		}
		fmt.Fprintf(stdout, "exported %d people to %s\n", len(f.People), out)
		return nil
	})
}

// readPeopleFile reads and checks a people file, listing every problem:
// the JSON's own, or each person's.
func readPeopleFile(path string) ([]people.Person, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f peopleFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, &people.InvalidError{Problems: []string{"the file is not the people file's JSON: " + err.Error()}}
	}
	if f.People == nil {
		return nil, &people.InvalidError{Problems: []string{`the file has no "people" list`}}
	}
	list := make([]people.Person, 0, len(f.People))
	for _, p := range f.People {
		list = append(list, people.Normalize(people.Person{Name: p.Name, Role: p.Role, GitHub: p.GitHub, FeishuOpenIDs: p.FeishuOpenIDs, FeishuUnionIDs: p.FeishuUnionIDs}))
	}
	if problems := people.ListProblems(list); len(problems) > 0 {
		return nil, &people.InvalidError{Problems: problems}
	}
	return list, nil
}

func peopleImport(ctx context.Context, cfg *config, path string, stdout, stderr io.Writer) error {
	list, err := readPeopleFile(path)
	if err != nil {
		return err
	}
	actor := cliActor()
	return withPeople(ctx, cfg, stderr, func(_ *db.DB, s *people.Store) error {
		err := s.Replace(ctx, list, func(tx *db.Tx) error {
			return people.Audit(ctx, tx, time.Now(), actor, actionPeopleImport, "people", fmt.Sprintf("%d people from %s", len(list), path))
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "imported %d people; the people are now exactly those in %s\n", len(list), path)
		return nil
	})
}
