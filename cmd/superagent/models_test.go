package main

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/model"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

const (
	executorKey = "sk-executor-0123456789abcdefABCD"
	routerKey   = "sk-router-0123456789abcdefABCDEF"
)

func TestRouterModelDefaultsToTheExecutors(t *testing.T) {
	c, err := loadConfig(envOf(map[string]string{
		"SUPERAGENT_MODEL": "exec-model", "SUPERAGENT_MODEL_BASE_URL": "https://models.example.com/v1",
		"SUPERAGENT_MODEL_API_KEY": executorKey, "SUPERAGENT_MODEL_MAX_OUTPUT_TOKENS": "4096",
		"SUPERAGENT_MODEL_TIMEOUT": "90s", "SUPERAGENT_MODEL_CONTEXT_WINDOW": "200000", "SUPERAGENT_MODEL_PRICE": "3,0.3,15",
	}))
	require.NoError(t, err)
	want := roleModel{BaseURL: "https://models.example.com/v1", APIKey: executorKey, Model: "exec-model", MaxOutputTokens: 4096,
		Timeout: 90 * time.Second, ContextWindow: 200_000, Price: &model.Price{Input: 3, CachedInput: 0.3, Output: 15}}
	require.Equal(t, want, c.ExecutorModel)
	require.Equal(t, want, c.Router)
}

func TestRouterModelSettings(t *testing.T) {
	base := map[string]string{
		"SUPERAGENT_MODEL": "exec-model", "SUPERAGENT_MODEL_BASE_URL": "https://models.example.com/v1",
		"SUPERAGENT_MODEL_API_KEY": executorKey, "SUPERAGENT_MODEL_MAX_OUTPUT_TOKENS": "4096",
	}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	t.Run("own endpoint, no key: the executor's key stays home", func(t *testing.T) {
		c, err := loadConfig(envOf(with(map[string]string{"SUPERAGENT_ROUTER_MODEL_BASE_URL": "https://router.example.org/v1"})))
		require.NoError(t, err)
		require.Equal(t, "https://router.example.org/v1", c.Router.BaseURL)
		require.Empty(t, c.Router.APIKey)
		require.Equal(t, int64(4096), c.Router.MaxOutputTokens, "the other settings still default to the executor's")
	})
	t.Run("everything its own", func(t *testing.T) {
		c, err := loadConfig(envOf(with(map[string]string{
			"SUPERAGENT_ROUTER_MODEL": "router-model", "SUPERAGENT_ROUTER_MODEL_BASE_URL": "https://router.example.org/v1",
			"SUPERAGENT_ROUTER_MODEL_API_KEY": routerKey, "SUPERAGENT_ROUTER_MODEL_MAX_OUTPUT_TOKENS": "512",
			"SUPERAGENT_ROUTER_MODEL_TIMEOUT": "20s", "SUPERAGENT_ROUTER_MODEL_CONTEXT_WINDOW": "32000",
		})))
		require.NoError(t, err)
		require.Equal(t, roleModel{BaseURL: "https://router.example.org/v1", APIKey: routerKey, Model: "router-model",
			MaxOutputTokens: 512, Timeout: 20 * time.Second, ContextWindow: 32_000}, c.Router)
		require.Equal(t, executorKey, c.ExecutorModel.APIKey)
		// The router's key is a secret like the executor's: no log line
		// carries it.
		var logs bytes.Buffer
		newLogger(&logs, c, slog.LevelInfo).Info("configured", "router", c.Router.APIKey, "executor", c.ExecutorModel.APIKey)
		require.NotContains(t, logs.String(), routerKey)
		require.NotContains(t, logs.String(), executorKey)
	})
	t.Run("refused values", func(t *testing.T) {
		for key, value := range map[string]string{
			"SUPERAGENT_MODEL_MAX_OUTPUT_TOKENS":        "-1",
			"SUPERAGENT_ROUTER_MODEL_MAX_OUTPUT_TOKENS": "lots",
			"SUPERAGENT_MODEL_TIMEOUT":                  "soon",
			"SUPERAGENT_ROUTER_MODEL_TIMEOUT":           "0s",
			"SUPERAGENT_MODEL_CONTEXT_WINDOW":           "0",
			"SUPERAGENT_ROUTER_MODEL_CONTEXT_WINDOW":    "1.5",
			"SUPERAGENT_ROUTER_MODEL_BASE_URL":          "ftp://router",
			"SUPERAGENT_TICKET_COST_BUDGET":             "a lot",
		} {
			_, err := loadConfig(envOf(with(map[string]string{key: value})))
			require.ErrorContains(t, err, key+":", key)
		}
	})
}

func TestTicketCostBudget(t *testing.T) {
	c, err := loadConfig(envOf(map[string]string{"SUPERAGENT_MODEL": "m", "SUPERAGENT_MODEL_PRICE": "3,0.3,15", "SUPERAGENT_TICKET_COST_BUDGET": "2.5"}))
	require.NoError(t, err)
	require.InDelta(t, 2.5, c.TicketCostBudget, 1e-12)
	_, err = loadConfig(envOf(map[string]string{"SUPERAGENT_MODEL": "m", "SUPERAGENT_TICKET_COST_BUDGET": "2.5"}))
	require.ErrorContains(t, err, "SUPERAGENT_TICKET_COST_BUDGET: needs SUPERAGENT_MODEL_PRICE")
}

// Each role's client talks to its own endpoint with its own key and asks
// for its own output limit.
func TestRoleClientsOnTheWire(t *testing.T) {
	exec, router := fakeopenai.New(t, fakeopenai.Text("ok")), fakeopenai.New(t, fakeopenai.Text("ok"))
	c, err := loadConfig(envOf(map[string]string{
		"SUPERAGENT_MODEL": "exec-model", "SUPERAGENT_MODEL_BASE_URL": exec.URL(), "SUPERAGENT_MODEL_API_KEY": executorKey,
		"SUPERAGENT_MODEL_MAX_OUTPUT_TOKENS": "4096",
		"SUPERAGENT_ROUTER_MODEL":            "router-model", "SUPERAGENT_ROUTER_MODEL_BASE_URL": router.URL(),
		"SUPERAGENT_ROUTER_MODEL_API_KEY": routerKey, "SUPERAGENT_ROUTER_MODEL_MAX_OUTPUT_TOKENS": "300",
	}))
	require.NoError(t, err)
	for _, r := range []struct {
		m       roleModel
		srv     *fakeopenai.Server
		key     string
		name    string
		maxToks int64
	}{{c.ExecutorModel, exec, executorKey, "exec-model", 4096}, {c.Router, router, routerKey, "router-model", 300}} {
		client, err := r.m.client()
		require.NoError(t, err)
		_, err = client.Complete(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}})
		require.NoError(t, err)
		got := r.srv.Last()
		require.Equal(t, "Bearer "+r.key, got.Header.Get("Authorization"))
		require.Equal(t, r.name, got.Model)
		require.Equal(t, r.maxToks, got.MaxTokens)
	}
}
