package github_test

import (
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
