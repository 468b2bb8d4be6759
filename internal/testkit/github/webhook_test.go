package github_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gogithub "github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/require"

	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
)

func TestSignWebhookIsWhatGoGitHubChecks(t *testing.T) {
	body := []byte(`{"action":"opened"}`)
	sig := fakegithub.SignWebhook("s3cret", body)
	require.NoError(t, gogithub.ValidateSignature(sig, body, []byte("s3cret")))
	require.Error(t, gogithub.ValidateSignature(sig, body, []byte("other")))
}

// webhookFixtures returns every GitHub webhook payload kept as test data,
// by path, with its event: the repository's copies, and the shared
// fixtures when they are beside the checkout.
func webhookFixtures(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	byFolder := func(root string) {
		dirs, err := os.ReadDir(root)
		require.NoError(t, err)
		for _, d := range dirs {
			if !d.IsDir() {
				continue
			}
			files, err := filepath.Glob(filepath.Join(root, d.Name(), "*.json"))
			require.NoError(t, err)
			for _, f := range files {
				out[f] = d.Name()
			}
		}
	}
	byFolder(filepath.Join("..", "..", "..", "webhooks", "testdata", "github"))
	// cmd/superagent/testdata/<event>.<action>.json
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "cmd", "superagent", "testdata", "*.json"))
	require.NoError(t, err)
	for _, f := range files {
		event, _, _ := strings.Cut(filepath.Base(f), ".")
		out[f] = event
	}
	dir, err := filepath.Abs(".")
	require.NoError(t, err)
	for ; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		if shared := filepath.Join(dir, "shared", "fixtures", "github"); isDir(shared) {
			byFolder(shared)
			return out
		}
	}
	t.Log("shared/fixtures/github is not beside the checkout: checking the repository's copies only")
	return out
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func TestEveryWebhookFixtureMatchesGitHubsSchema(t *testing.T) {
	fixtures := webhookFixtures(t)
	require.Greater(t, len(fixtures), 40)
	for path, event := range fixtures {
		body, err := os.ReadFile(path)
		require.NoError(t, err)
		for _, p := range fakegithub.WebhookProblems(event, body) {
			t.Errorf("%s: %s", path, p)
		}
	}
}

func TestWebhookProblemsOnAPlantedWrongField(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("..", "..", "..", "webhooks", "testdata", "github", "issue_comment", "created.payload.json"))
	require.NoError(t, err)
	require.Empty(t, fakegithub.WebhookProblems("issue_comment", body))

	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m))
	m["comment"].(map[string]any)["author_association"] = "FRIEND"
	m["issue"].(map[string]any)["number"] = "1"
	delete(m["sender"].(map[string]any), "login")
	planted, err := json.Marshal(m)
	require.NoError(t, err)
	var got []string
	for _, p := range fakegithub.WebhookProblems("issue_comment", planted) {
		got = append(got, p.String())
	}
	require.Contains(t, strings.Join(got, "\n"), "webhook issue_comment.created at /comment/author_association: value must be one of")
	require.Contains(t, strings.Join(got, "\n"), "at /issue/number: got string, want integer")
	require.Contains(t, strings.Join(got, "\n"), "at /sender: missing property 'login'")

	require.Equal(t, "webhook issue_commentary: no schema for this event in @octokit/webhooks-schemas",
		fakegithub.WebhookProblems("issue_commentary", body)[0].String())
	require.Empty(t, fakegithub.WebhookProblems("ping", mustRead(t, filepath.Join("..", "..", "..", "webhooks", "testdata", "github", "ping", "payload.json"))))
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}
