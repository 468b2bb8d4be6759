package promptparts

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/policy"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./promptparts -run %s -update to create it", t.Name())
	require.Equal(t, string(want), got)
}

const teamConfig = `{
	"base_revision": 0,
	"note": "golden",
	"sections": {
		"communication": {"text": "Write plainly. Name the pull request.", "review_bots": ["coderabbitai", "sonar-bot"]},
		"ticket_scope": {"text": "Stop with a draft when a change touches the billing schema."},
		"delivery_requirements": {
			"text": "Every pull request shows the tests that ran.",
			"auto_merge": {"enabled": true, "max_changed_lines": 40, "checks": ["ci/test"], "approvals": 1},
			"commit_author": {"name": "Release Bot", "email": "release-bot@example.com"}
		}
	},
	"skills": {"identities": "Feishu Alice is GitHub @alice."},
	"policy": {"mode": "propose", "rules": [
		{"id": "flaky-tests", "name": "Flaky tests", "instruction": "Propose a fix when CI fails on a test that passes on retry."},
		{"id": "dead-links", "name": "Dead links", "instruction": "Fix broken documentation links.", "enabled": false}
	]}
}`

var (
	mainEnv = []Var{
		{Name: "Deployment", Value: "superagent at example.com"},
		{Name: "Repositories", Value: "acme/api, acme/web"},
	}
	executorInput = Input{
		Role: RoleExecutor,
		Environment: []Var{
			{Name: "Ticket", Value: "T-42: fix the flaky login test"},
			{Name: "Repository", Value: "acme/api"},
			{Name: "Branch", Value: "superagent/t-42"},
			{Name: "Mandate", Value: "write acme/api; admitted by rule flaky-tests"},
		},
		AgentsMD: []AgentsFile{
			{Path: "AGENTS.md", Text: "Run `make test` before pushing.\n"},
			{Path: "services/login/AGENTS.md", Text: "The login service uses fixtures in testdata/.\n"},
		},
		InferredRules: []policy.Rule{{ID: "flaky-tests", Name: "Flaky tests", Instruction: "Propose a fix when CI fails on a test that passes on retry.", Enabled: true}},
	}
)

// The built-in texts are written by hand and change; regenerate with
// go test ./promptparts -run TestAssembleGolden -update after changing them.
func TestAssembleGolden(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := dbtest.SQLite(t)
	s, err := New(Config{}, d)
	require.NoError(t, err)

	prompt, rev, err := s.Assemble(ctx, Input{Role: RoleMain, Environment: mainEnv})
	require.NoError(t, err)
	require.Equal(t, int64(0), rev)
	golden(t, "main_defaults", prompt)

	_, err = s.SaveJSON(ctx, []byte(teamConfig), panel)
	require.NoError(t, err)

	prompt, rev, err = s.Assemble(ctx, Input{Role: RoleMain, Environment: mainEnv})
	require.NoError(t, err)
	require.Equal(t, int64(1), rev)
	golden(t, "main", prompt)

	prompt, rev, err = s.Assemble(ctx, executorInput)
	require.NoError(t, err)
	require.Equal(t, int64(1), rev)
	golden(t, "executor", prompt)
}

func TestAssembleOrder(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := newService(t, d, testDefaults())
		save(t, s, teamConfig)

		prompt, rev, err := s.Assemble(ctx, Input{Role: RoleMain, Environment: mainEnv})
		require.NoError(t, err)
		require.Equal(t, int64(1), rev)
		requireInOrder(t, prompt,
			"# runtime/shared", "# runtime/orchestrator",
			"# Communication", "Write plainly.", "`coderabbitai`, `sonar-bot`",
			"# Ticket scope", "# Delivery requirements", "changes at most 40 lines", "Release Bot <release-bot@example.com>",
			"# Team skills", "`identities`",
			"# runtime/subscriptions", "# runtime/replies", "# runtime/dispatch", "# runtime/admission", "# runtime/handoff/orchestrator",
			"# Environment", "- Deployment: superagent at example.com\n- Repositories: acme/api, acme/web",
			"# Policy", "Version 1, mode propose (explicit-request exemption: on).",
			"- Flaky tests (flaky-tests): Propose a fix when CI fails on a test that passes on retry.\n")
		require.True(t, strings.HasSuffix(prompt, "on retry.\n"), "the Policy section is last")
		for _, absent := range []string{"runtime/worker", "runtime/work\n", "coding", "Dead links", "AGENTS.md", "Inferred Ticket"} {
			require.NotContains(t, prompt, absent)
		}

		prompt, _, err = s.Assemble(ctx, executorInput)
		require.NoError(t, err)
		requireInOrder(t, prompt,
			"# runtime/shared", "# runtime/worker", "# Communication", "# Ticket scope", "# Delivery requirements", "# Team skills",
			"# runtime/subscriptions", "# runtime/replies", "# runtime/work", "# runtime/handoff/worker", "# coding",
			"# Repository instructions (AGENTS.md)", "## AGENTS.md", "make test", "## services/login/AGENTS.md",
			"# Environment", "- Ticket: T-42", "- Mandate: write acme/api",
			"# Inferred Ticket", "- Flaky tests (flaky-tests): Propose a fix")
		for _, absent := range []string{"runtime/orchestrator", "runtime/dispatch", "runtime/admission", "# Policy"} {
			require.NotContains(t, prompt, absent)
		}

		// An explicit Ticket's Executor gets no inferred note.
		in := executorInput
		in.InferredRules = nil
		prompt, _, err = s.Assemble(ctx, in)
		require.NoError(t, err)
		require.NotContains(t, prompt, "Inferred Ticket")
		require.True(t, strings.HasSuffix(prompt, "- Mandate: write acme/api; admitted by rule flaky-tests\n"))

		_, _, err = s.Assemble(ctx, Input{Role: "janitor"})
		require.Error(t, err)
	})
}

func requireInOrder(t *testing.T, text string, parts ...string) {
	t.Helper()
	at := 0
	for _, p := range parts {
		i := strings.Index(text[at:], p)
		require.GreaterOrEqual(t, i, 0, "%q missing after offset %d", p, at)
		at += i + len(p)
	}
}

// Sessions read the latest revision on every call: a save in another
// process (another Service on the same database) shows on the next call.
func TestAssembleReadsTheLatestRevision(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		reader := newService(t, d, testDefaults())
		writer := newService(t, d, testDefaults())

		prompt, rev, err := reader.Assemble(ctx, Input{Role: RoleMain})
		require.NoError(t, err)
		require.Equal(t, int64(0), rev)
		require.Contains(t, prompt, "Built-in text of runtime/dispatch.")

		save(t, writer, `{"base_revision": 0, "overrides": {"runtime/dispatch": {"text": "# Dispatch\n\nRoute in batches."}}}`)
		// On PostgreSQL the reader hears of the save by NOTIFY, a moment
		// after the commit; on SQLite it reads the head on every call.
		requireRevision(t, reader, 1)
		prompt, rev, err = reader.Assemble(ctx, Input{Role: RoleMain})
		require.NoError(t, err)
		require.Equal(t, int64(1), rev)
		require.Contains(t, prompt, "Route in batches.")
		require.NotContains(t, prompt, "Built-in text of runtime/dispatch.")

		// The writer itself sees its save at once.
		_, rev, err = writer.Assemble(ctx, Input{Role: RoleMain})
		require.NoError(t, err)
		require.Equal(t, int64(1), rev)

		// A service that was not started reads the head per call.
		cold, err := New(Config{Defaults: testDefaults()}, d)
		require.NoError(t, err)
		_, rev, err = cold.Assemble(ctx, Input{Role: RoleMain})
		require.NoError(t, err)
		require.Equal(t, int64(1), rev)

		// An old revision stays readable.
		prompt, rev, err = reader.AssembleAt(ctx, 0, Input{Role: RoleMain})
		require.NoError(t, err)
		require.Equal(t, int64(0), rev)
		require.Contains(t, prompt, "Built-in text of runtime/dispatch.")

		text, rev, ok, err := reader.Skill(ctx, "github")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, int64(1), rev)
		require.Contains(t, text, "skill/github")
		_, _, ok, err = reader.Skill(ctx, "nope")
		require.NoError(t, err)
		require.False(t, ok)
	})
}

func requireRevision(t *testing.T, s *Service, want int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, rev, err := s.Assemble(context.Background(), Input{Role: RoleMain})
		return err == nil && rev == want
	}, 5*time.Second, time.Millisecond, "revision %d never became the latest", want)
}

// The PostgreSQL listener survives losing its connection: while it is down
// every call reads the head, and it comes back by itself.
func TestListenerReconnects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := dbtest.Postgres(t)
	reader := newService(t, d, testDefaults())
	writer := newService(t, d, testDefaults())
	require.Eventually(t, func() bool { return reader.watch.listening.Load() }, 5*time.Second, time.Millisecond)

	pid := reader.watch.pid.Load()
	_, err := d.Exec(ctx, `SELECT pg_terminate_backend($1)`, int32(pid))
	require.NoError(t, err)
	save(t, writer, `{"base_revision": 0, "sections": {"ticket_scope": {"text": "after the cut"}}}`)
	requireRevision(t, reader, 1)

	require.Eventually(t, func() bool {
		return reader.watch.listening.Load() && reader.watch.pid.Load() != pid
	}, 10*time.Second, time.Millisecond, "the listener came back on a new connection")
	save(t, writer, `{"base_revision": 1, "sections": {"ticket_scope": {"text": "after the return"}}}`)
	requireRevision(t, reader, 2)
}

// Saves in another schema of the same PostgreSQL database (another
// deployment, or another test) do not move this service's head: NOTIFY
// channels are database-wide.
func TestListenerHearsOnlyItsSchema(t *testing.T) {
	t.Parallel()
	ours := newService(t, dbtest.PostgresInSchema(t), testDefaults())
	theirs := newService(t, dbtest.PostgresInSchema(t), testDefaults())
	require.Eventually(t, func() bool { return ours.watch.listening.Load() && theirs.watch.listening.Load() }, 5*time.Second, time.Millisecond)
	for rev := range 3 {
		save(t, theirs, fmt.Sprintf(`{"base_revision": %d, "sections": {"ticket_scope": {"text": "theirs %d"}}}`, rev, rev))
	}
	requireRevision(t, theirs, 3)
	save(t, ours, `{"base_revision": 0, "sections": {"ticket_scope": {"text": "ours"}}}`)
	requireRevision(t, ours, 1)
	_, rev, err := ours.Assemble(context.Background(), Input{Role: RoleMain})
	require.NoError(t, err, "the head is a revision of this schema")
	require.Equal(t, int64(1), rev)
}

// A policy change leaves every byte before the Policy section unchanged, so
// the provider's prompt cache keeps the prefix.
func TestPolicyChangeKeepsThePrefix(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s, err := New(Config{}, d)
		require.NoError(t, err)
		_, err = s.SaveJSON(ctx, []byte(teamConfig), panel)
		require.NoError(t, err)
		before, _, err := s.Assemble(ctx, Input{Role: RoleMain, Environment: mainEnv})
		require.NoError(t, err)

		_, err = s.SaveJSON(ctx, []byte(`{"base_revision": 1, "policy": {"mode": "auto", "explicit_request_exemption": false, "rules": [
			{"id": "deps", "name": "Dependency updates", "instruction": "Apply patch-level dependency updates."}]}}`), panel)
		require.NoError(t, err)
		after, rev, err := s.Assemble(ctx, Input{Role: RoleMain, Environment: mainEnv})
		require.NoError(t, err)
		require.Equal(t, int64(2), rev)
		require.NotEqual(t, before, after)

		cut := strings.LastIndex(before, "\n# Policy\n")
		require.Positive(t, cut)
		require.Equal(t, before[:cut], after[:cut], "the prefix up to the Policy section is byte-identical")
		require.Equal(t, cut, strings.LastIndex(after, "\n# Policy\n"))
		require.Contains(t, after[cut:], "- Dependency updates (deps): Apply patch-level dependency updates.")
	})
}

func TestCurrent(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := newService(t, d, testDefaults())
		st, rev, err := s.Current(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(0), rev)
		require.Equal(t, DefaultSettings(), st)
		save(t, s, teamConfig)
		st, rev, err = s.Current(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(1), rev)
		require.Equal(t, 40, st.Sections.DeliveryRequirements.AutoMerge.MaxChangedLines)
		require.NoError(t, st.Policy.CheckInferred([]string{"flaky-tests"}))
		st.Policy.Rules[0].Enabled = false
		again, _, err := s.Current(ctx)
		require.NoError(t, err)
		require.True(t, again.Policy.Rules[0].Enabled, "callers get a copy")
	})
}

// Sessions assemble while the team saves: every prompt matches the revision
// returned with it, and no Session ever goes back to an older revision.
func TestAssembleDuringSaves(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := newService(t, d, testDefaults())
		const saves = 5
		done := make(chan struct{})
		errs := make(chan error, 4)
		for range 4 {
			go func() {
				last := int64(0)
				for {
					prompt, rev, err := s.Assemble(ctx, Input{Role: RoleMain})
					if err != nil {
						errs <- err
						return
					}
					if rev < last {
						errs <- fmt.Errorf("went back from revision %d to %d", last, rev)
						return
					}
					if want := fmt.Sprintf("Scope of revision %d.", rev); rev > 0 && !strings.Contains(prompt, want) {
						errs <- fmt.Errorf("prompt of revision %d lacks %q", rev, want)
						return
					}
					last = rev
					select {
					case <-done:
						errs <- nil
						return
					default:
					}
				}
			}()
		}
		for i := range saves {
			save(t, s, fmt.Sprintf(`{"base_revision": %d, "sections": {"ticket_scope": {"text": "Scope of revision %d."}}}`, i, i+1))
		}
		close(done)
		for range 4 {
			require.NoError(t, <-errs)
		}
	})
}
