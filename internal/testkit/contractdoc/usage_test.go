package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every platform operation the product's code uses is one a fake holds to
// the platform's description: a new call must come with its contract.
func TestEveryUseIsHeldToADescription(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	require.NoError(t, err)
	r, err := collect(root)
	require.NoError(t, err)
	require.NotEmpty(t, r.github)
	for _, u := range r.github {
		require.True(t, r.inContract[u.ID], "%s (%s, in %s) is not in internal/testkit/github/testdata/operations.txt", u.ID, u.Via, strings.Join(u.Files, ", "))
	}
	for _, u := range r.feishu {
		require.True(t, r.feishuCalls[u.ID], "Feishu call %s (in %s) has no published schema in the fake", u.ID, strings.Join(u.Files, ", "))
	}
	var ids []string
	for _, u := range r.webhooks {
		ids = append(ids, u.ID)
	}
	require.Contains(t, ids, "issue_comment.created")
	require.Contains(t, ids, "workflow_run.completed")
	require.Contains(t, ids, "push")
}

func TestPick(t *testing.T) {
	ops := []metaOp{{"GET", "/app"}, {"GET", "/apps/{app_slug}"}}
	require.Equal(t, []metaOp{{"GET", "/app"}}, pick(ops, `ctx, ""`))
	require.Equal(t, []metaOp{{"GET", "/apps/{app_slug}"}}, pick(ops, `ctx, slug`))
	require.Equal(t, ops[:1], pick(ops[:1], `ctx, slug`))
}
