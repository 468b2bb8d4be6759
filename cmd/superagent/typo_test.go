package main

import (
	"fmt"
	"testing"

	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

// typoRepo is a fake GitHub holding helloRepo with a misspelled README and
// a test.sh that fails while the typo is there, where Codertocat may write.
// It returns the repository's bare git directory too.
func typoRepo(t *testing.T) (*fakegithub.Server, string) {
	t.Helper()
	gh := fakegithub.New(t)
	bare := gh.AddRepo(t, helloRepo, "main", map[string]string{
		"README.md": "# Hello World\n\nThis projetc says hello.\n",
		"test.sh":   "#!/bin/sh\nif grep -q projetc README.md; then echo 'typo still there'; exit 1; fi\necho ok\n",
	})
	gh.SetPermission(helloRepo, "Codertocat", "write")
	return gh, bare
}

// scriptedModel is a fake model API on which router plays the main
// Session and executor the Executors.
func scriptedModel(t *testing.T, executor func(fakeopenai.Request) fakeopenai.Reply) *fakeopenai.Server {
	t.Helper()
	model := fakeopenai.New(t)
	model.Fallback(fakeopenai.Respond(func(req fakeopenai.Request) fakeopenai.Reply {
		if req.Model == "router-model" {
			return router(req)
		}
		return executor(req)
	}))
	return model
}

// serviceEnv is the environment of a process of the service on dbURL, the
// fake GitHub and the fake model, with a data directory of its own (its own
// machine).
func serviceEnv(t *testing.T, dbURL string, gh *fakegithub.Server, model *fakeopenai.Server, secret, token string) map[string]string {
	t.Helper()
	return map[string]string{
		"SUPERAGENT_ADDR":                  freeAddr(t),
		"SUPERAGENT_DATA_DIR":              t.TempDir(),
		"SUPERAGENT_DATABASE_URL":          dbURL,
		"SUPERAGENT_ADMIN_TOKEN":           token,
		"SUPERAGENT_GITHUB_APP_ID":         fmt.Sprint(gh.AppID),
		"SUPERAGENT_GITHUB_PRIVATE_KEY":    string(gh.PrivateKey()),
		"SUPERAGENT_GITHUB_API_URL":        gh.URL,
		"SUPERAGENT_GITHUB_WEBHOOK_SECRET": secret,
		"SUPERAGENT_MODEL_BASE_URL":        model.URL(),
		"SUPERAGENT_MODEL_API_KEY":         "sk-test-process-key-0001",
		"SUPERAGENT_MODEL":                 "executor-model",
		"SUPERAGENT_ROUTER_MODEL":          "router-model",
		"SUPERAGENT_ROUTING_DEBOUNCE":      "100ms",
	}
}
