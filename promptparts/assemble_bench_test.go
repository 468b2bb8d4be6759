package promptparts

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
)

// realisticConfig overrides every built-in part (the default text plus a
// team paragraph), fills the sections, adds skills and 20 enabled rules.
func realisticConfig(t testing.TB, s *Service) []byte {
	overrides := map[string]any{}
	for _, key := range s.reg.Keys() {
		overrides[key] = map[string]string{"text": s.reg.Text(key) + "\nThe team adds a paragraph of its own to " + key + ".\n"}
	}
	var rules []map[string]any
	for i := range 20 {
		rules = append(rules, map[string]any{
			"id": fmt.Sprintf("rule-%02d", i), "name": fmt.Sprintf("Rule %d", i),
			"instruction": strings.Repeat(fmt.Sprintf("Take up candidates of kind %d when the evidence is clear. ", i), 3),
		})
	}
	body, err := json.Marshal(map[string]any{
		"base_revision": 0,
		"overrides":     overrides,
		"sections": map[string]any{
			"communication":         map[string]any{"text": strings.Repeat("Write plainly and briefly. ", 40), "review_bots": []string{"coderabbitai", "sonar"}},
			"ticket_scope":          map[string]any{"text": strings.Repeat("Stop with a draft on schema changes. ", 30)},
			"delivery_requirements": map[string]any{"text": strings.Repeat("Show the tests that ran. ", 30), "auto_merge": map[string]any{"enabled": true, "max_changed_lines": 50}},
		},
		"skills": map[string]string{"identities": strings.Repeat("alice = @alice\n", 50), "deploys": strings.Repeat("Deploy with make deploy.\n", 40)},
		"policy": map[string]any{"mode": "auto", "rules": rules},
	})
	require.NoError(t, err)
	return body
}

// BenchmarkAssemble measures one model request's prompt assembly at
// realistic size, including the read of the latest revision from the
// database. PostgreSQL runs when SUPERAGENT_TEST_DATABASE_URL is set.
func BenchmarkAssemble(b *testing.B) {
	run := func(b *testing.B, d *db.DB, listen bool) {
		ctx := context.Background()
		s, err := New(Config{}, d)
		require.NoError(b, err)
		if listen {
			require.NoError(b, s.Start(ctx))
			b.Cleanup(s.Stop)
		}
		_, err = s.SaveJSON(ctx, realisticConfig(b, s), panel)
		require.NoError(b, err)
		for _, in := range []Input{
			{Role: RoleMain, Environment: mainEnv},
			executorInput,
		} {
			// A Session asks with the same input on every model request.
			b.Run(string(in.Role), func(b *testing.B) {
				prompt, rev, err := s.Assemble(ctx, in)
				require.NoError(b, err)
				require.Equal(b, int64(1), rev)
				b.ReportAllocs()
				for b.Loop() {
					if _, _, err := s.Assemble(ctx, in); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(prompt)), "prompt-bytes")
			})
		}
		// Every call a different Ticket: the prompt is built anew each time.
		b.Run("executor-distinct", func(b *testing.B) {
			inputs := make([]Input, 3*maxOutputs)
			for i := range inputs {
				inputs[i] = executorInput
				inputs[i].Environment = append([]Var{{Name: "Ticket", Value: fmt.Sprintf("T-%d", i)}}, executorInput.Environment[1:]...)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, _, err := s.Assemble(ctx, inputs[i%len(inputs)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
	b.Run("sqlite", func(b *testing.B) { run(b, dbtest.SQLite(b), true) })
	// With Start, PostgreSQL learns of saves by LISTEN/NOTIFY; without it,
	// every call reads the head revision over the network.
	for _, listen := range []bool{true, false} {
		name := "postgres"
		if !listen {
			name = "postgres-query-per-call"
		}
		b.Run(name, func(b *testing.B) {
			if os.Getenv(dbtest.URLEnv) == "" {
				b.Skipf("%s is not set", dbtest.URLEnv)
			}
			run(b, dbtest.Postgres(b), listen)
		})
	}
}
