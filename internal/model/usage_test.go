package model_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/model"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

func TestParseUsage(t *testing.T) {
	tests := []struct {
		name string
		raw  any
		want model.Usage
	}{
		{"openai", fakeopenai.UsageOpenAI(1000, 800, 50), model.Usage{Input: 200, CacheRead: 800, Output: 50}},
		{"openai reasoning", map[string]any{"prompt_tokens": 10, "completion_tokens": 40,
			"completion_tokens_details": map[string]any{"reasoning_tokens": 30}}, model.Usage{Input: 10, Output: 40, Reasoning: 30}},
		{"deepseek", fakeopenai.UsageDeepSeek(640, 360, 20, 5), model.Usage{Input: 360, CacheRead: 640, Output: 20, Reasoning: 5}},
		{"kimi", fakeopenai.UsageKimi(500, 300, 7), model.Usage{Input: 200, CacheRead: 300, Output: 7}},
		{"anthropic-compatible gateway", fakeopenai.UsageAnthropic(30, 900, 70, 11), model.Usage{Input: 30, CacheRead: 900, CacheWrite: 70, Output: 11}},
		{"qwen explicit cache", fakeopenai.UsageQwen(1000, 600, 300, 9), model.Usage{Input: 100, CacheRead: 600, CacheWrite: 300, Output: 9}},
		{"gateway with top-level cache_read_input_tokens and inclusive prompt", map[string]any{"prompt_tokens": 1000,
			"completion_tokens": 5, "cache_read_input_tokens": 400, "cache_creation_input_tokens": 100},
			model.Usage{Input: 500, CacheRead: 400, CacheWrite: 100, Output: 5}},
		{"gateway whose prompt_tokens excludes the cache", map[string]any{"prompt_tokens": 20, "completion_tokens": 5,
			"cache_read_tokens": 400}, model.Usage{Input: 20, CacheRead: 400, Output: 5}},
		{"no usage", nil, model.Usage{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := json.Marshal(tt.raw)
			require.NoError(t, err)
			got, err := model.ParseUsage(raw)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestUsageThroughClientWithCost(t *testing.T) {
	srv := fakeopenai.New(t,
		fakeopenai.Reply{Content: "a", Usage: fakeopenai.UsageDeepSeek(1_000_000, 2_000_000, 1_000_000, 0)},
		fakeopenai.Reply{Content: "b", Usage: fakeopenai.UsageAnthropic(1_000_000, 0, 1_000_000, 0), Model: "priced-by-report"},
	)
	c, _ := newClient(t, srv, func(c *model.Config) {
		c.Prices = map[string]model.Price{
			"test-model":       {Input: 0.27, CachedInput: 0.07, Output: 1.10},
			"priced-by-report": {Input: 3, CacheWrite: 3.75, Output: 15},
		}
	})
	resp, err := c.Complete(t.Context(), model.Request{Messages: []model.Message{{Role: "user", Content: "x"}}})
	require.NoError(t, err)
	require.Equal(t, model.Usage{Input: 2_000_000, CacheRead: 1_000_000, Output: 1_000_000, Cost: 2*0.27 + 0.07 + 1.10}, resp.Usage)
	require.EqualValues(t, 3_000_000, resp.Usage.Prompt())

	// The configured model's price wins over the reported model's.
	resp, err = c.Complete(t.Context(), model.Request{Messages: []model.Message{{Role: "user", Content: "x"}}})
	require.NoError(t, err)
	require.InDelta(t, 0.27+0.27, resp.Usage.Cost, 1e-9)
}

func TestPriceDefaults(t *testing.T) {
	p := model.Price{Input: 2, Output: 8}
	require.InDelta(t, (2*100+2*50+2*25+8*10)/1e6, p.Cost(model.Usage{Input: 100, CacheRead: 50, CacheWrite: 25, Output: 10}), 1e-12)
}
