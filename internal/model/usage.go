package model

import (
	"cmp"
	"encoding/json"
	"fmt"
)

// Usage is a request's token usage in one shape for every provider.
type Usage struct {
	// Input is prompt tokens not served from the provider's cache.
	Input int64 `json:"input"`
	// Output is generated tokens, reasoning included.
	Output int64 `json:"output"`
	// CacheRead is prompt tokens served from the cache.
	CacheRead int64 `json:"cache_read"`
	// CacheWrite is prompt tokens written to the cache (providers that bill
	// for it).
	CacheWrite int64 `json:"cache_write"`
	// Reasoning is the part of Output spent on reasoning, where reported.
	Reasoning int64 `json:"reasoning"`
	// Cost is the price of the request in the currency of the configured
	// Prices; zero when the model has no price.
	Cost float64 `json:"cost"`
}

// Prompt is the whole prompt's size: cached and uncached input together.
func (u Usage) Prompt() int64 { return u.Input + u.CacheRead + u.CacheWrite }

// Total is every token the request processed.
func (u Usage) Total() int64 { return u.Prompt() + u.Output }

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		Input:      u.Input + o.Input,
		Output:     u.Output + o.Output,
		CacheRead:  u.CacheRead + o.CacheRead,
		CacheWrite: u.CacheWrite + o.CacheWrite,
		Reasoning:  u.Reasoning + o.Reasoning,
		Cost:       u.Cost + o.Cost,
	}
}

// Price is what a model costs per million tokens.
type Price struct {
	// Input is the price of uncached input.
	Input float64
	// CachedInput is the price of input read from the cache. Default: Input.
	CachedInput float64
	// CacheWrite is the price of input written to the cache. Default: Input.
	CacheWrite float64
	// Output is the price of output tokens.
	Output float64
}

// Cost prices u.
func (p Price) Cost(u Usage) float64 {
	cached, write := p.CachedInput, p.CacheWrite
	if cached == 0 {
		cached = p.Input
	}
	if write == 0 {
		write = p.Input
	}
	return (float64(u.Input)*p.Input + float64(u.CacheRead)*cached +
		float64(u.CacheWrite)*write + float64(u.Output)*p.Output) / 1e6
}

// rawUsage holds every usage field name the OpenAI-compatible providers and
// gateways are known to send. Pointers tell "absent" from zero.
type rawUsage struct {
	PromptTokens     *int64 `json:"prompt_tokens"`
	CompletionTokens *int64 `json:"completion_tokens"`
	// Anthropic-shaped gateways: input_tokens excludes cached input.
	InputTokens  *int64 `json:"input_tokens"`
	OutputTokens *int64 `json:"output_tokens"`

	PromptTokensDetails struct {
		CachedTokens             int64 `json:"cached_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheWriteTokens         int64 `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`

	// DeepSeek.
	PromptCacheHitTokens  int64  `json:"prompt_cache_hit_tokens"`
	PromptCacheMissTokens *int64 `json:"prompt_cache_miss_tokens"`
	// Kimi / Moonshot.
	CachedTokens int64 `json:"cached_tokens"`
	// Anthropic-compatible gateways, Qwen (DashScope) at top level.
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	// Some gateways.
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
	ReasoningTokens  int64 `json:"reasoning_tokens"`
}

// ParseUsage normalises a provider's raw usage object. Where a provider
// reports prompt_tokens inclusive of cached input (OpenAI, DeepSeek, Kimi,
// Qwen), the cache reads and writes are subtracted to get Input; a DeepSeek
// miss count is taken as Input directly; Anthropic-shaped input_tokens are
// already exclusive. Cost is left to the caller.
func ParseUsage(raw []byte) (Usage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return Usage{}, nil
	}
	var r rawUsage
	if err := json.Unmarshal(raw, &r); err != nil {
		return Usage{}, fmt.Errorf("decoding usage: %w", err)
	}
	u := Usage{
		CacheRead: cmp.Or(r.PromptTokensDetails.CachedTokens, r.PromptCacheHitTokens,
			r.CachedTokens, r.CacheReadInputTokens, r.CacheReadTokens),
		CacheWrite: cmp.Or(r.PromptTokensDetails.CacheCreationInputTokens, r.CacheCreationInputTokens,
			r.PromptTokensDetails.CacheWriteTokens, r.CacheWriteTokens),
		Reasoning: cmp.Or(r.CompletionTokensDetails.ReasoningTokens,
			r.OutputTokensDetails.ReasoningTokens, r.ReasoningTokens),
	}
	switch {
	case r.CompletionTokens != nil:
		u.Output = *r.CompletionTokens
	case r.OutputTokens != nil:
		u.Output = *r.OutputTokens
	}
	switch {
	case r.PromptCacheMissTokens != nil:
		u.Input = *r.PromptCacheMissTokens
	case r.PromptTokens != nil:
		p := *r.PromptTokens
		switch {
		case u.CacheRead+u.CacheWrite <= p:
			u.Input = p - u.CacheRead - u.CacheWrite
		case u.CacheRead <= p:
			// A gateway whose prompt_tokens leaves cache writes out.
			u.Input = p - u.CacheRead
		default:
			// One whose prompt_tokens leaves the cache out altogether.
			u.Input = p
		}
	case r.InputTokens != nil:
		u.Input = *r.InputTokens
	}
	return u, nil
}
