package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
	"github.com/superagent-dev/superagent/orchestrator"
)

// The main Session's environment lists the installed repositories as they
// are at each model request, not as they were when the process started.
func TestEnvironmentListsRepositoriesFresh(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d, nil)
		require.NoError(t, githubapp.RecordRepository(ctx, d, installation*1000+1, "main", "The parser\nand its CLI"))
		e.admit(t, request(1, "hello"))
		e.model.Push(fakeopenai.Text("ok"))
		e.turn(t)
		first := e.model.Requests()[0].System()
		require.Contains(t, first, "- installed repositories: octo/repo (default branch main): The parser and its CLI")
		require.NotContains(t, first, "octo/other")

		seed.Installation(t, d, 8, "octo/other")
		e.admit(t, request(2, "hello again"))
		e.model.Push(fakeopenai.Text("ok"))
		e.turn(t)
		last := e.model.Last().System()
		require.Contains(t, last, "installed repositories: octo/other\n  octo/repo (default branch main)")
	})
}

func TestReadReposSearchesAndBounds(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d, nil)
		var many []string
		for i := range 40 {
			many = append(many, fmt.Sprintf("acme/svc-%02d", i))
		}
		seed.Installation(t, d, 9, many...)
		require.NoError(t, githubapp.RecordRepository(ctx, d, installation*1000+1, "trunk", "Parser of "+strings.Repeat("long ", 100)))
		e.admit(t, request(1, "which repo?"))
		e.model.Push(fakeopenai.Calls(
			fakeopenai.Call("parser", orchestrator.ToolRead, `{"what":"repos","search":"PARSER"}`),
			fakeopenai.Call("svc", orchestrator.ToolRead, `{"what":"repos","search":"svc-"}`),
			fakeopenai.Call("none", orchestrator.ToolRead, `{"what":"repos","search":"100%"}`),
		), fakeopenai.Text("ok"))
		e.turn(t)

		var got struct {
			Repos []githubapp.Repository `json:"repos"`
			More  string                 `json:"more"`
		}
		require.NoError(t, json.Unmarshal([]byte(e.toolResult(t, "parser")), &got))
		require.Len(t, got.Repos, 1)
		require.Equal(t, "octo/repo", got.Repos[0].FullName)
		require.Equal(t, "trunk", got.Repos[0].DefaultBranch)
		require.Len(t, []rune(got.Repos[0].Description), 200, "descriptions are bounded")
		require.Empty(t, got.More)

		got.Repos, got.More = nil, ""
		require.NoError(t, json.Unmarshal([]byte(e.toolResult(t, "svc")), &got))
		require.Len(t, got.Repos, 30)
		require.Equal(t, "acme/svc-00", got.Repos[0].FullName)
		require.NotEmpty(t, got.More)

		require.JSONEq(t, `{"repos":[]}`, e.toolResult(t, "none"), "a search's % is a character, not a wildcard")

		// 41 repositories: the environment lists the first 50, so all.
		require.Contains(t, e.model.Requests()[0].System(), "acme/svc-39")
	})
}
