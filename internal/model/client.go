// Package model talks to OpenAI-compatible chat completion APIs (OpenAI,
// DeepSeek, Kimi, Qwen, vLLM, Ollama, gateways) through openai-go, and hides
// their differences: it retries rate limits and server errors with backoff,
// normalises token usage and its cost, and captures reasoning text and sends
// it back where the provider requires it.
package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/superagent-dev/superagent/internal/retry"
)

// Replay says whether reasoning text is sent back to the provider.
type Replay string

// Replay settings.
const (
	// ReplayAuto replays for providers known to require it (DeepSeek and
	// Kimi/Moonshot, recognised by the base URL's host) and not otherwise.
	ReplayAuto Replay = ""
	// ReplayAlways puts captured reasoning back on every assistant message
	// that carried tool calls.
	ReplayAlways Replay = "always"
	// ReplayNever never sends reasoning back.
	ReplayNever Replay = "never"
)

// Config configures the client of one role (main Session or Executor). The
// zero value of each field is its documented default; Model is required.
type Config struct {
	// BaseURL is the API's base. Default: https://api.openai.com/v1.
	BaseURL string
	// APIKey is sent as a bearer token. Default: none (local servers).
	APIKey string
	// Model names the model to request.
	Model string
	// MaxOutputTokens caps each answer. Default: 0, the provider's default.
	MaxOutputTokens int64
	// MaxTokensField is the request field for MaxOutputTokens:
	// "max_completion_tokens" or "max_tokens". Default: the first on
	// api.openai.com, the second elsewhere (what other providers read).
	MaxTokensField string
	// Timeout bounds one attempt. Default: 10 minutes.
	Timeout time.Duration
	// MaxRetries is how many times a failed request is retried (429, 408,
	// 409, 5xx, transport errors). Default: 6. Negative: never.
	MaxRetries int
	// RetryBaseDelay is the first backoff. Default: 1 second.
	RetryBaseDelay time.Duration
	// RetryMaxDelay caps the backoff. A Retry-After longer than this makes
	// the client give up instead of waiting. Default: 2 minutes.
	RetryMaxDelay time.Duration
	// ContextWindow is the model's context size in tokens, for the caller's
	// rollover decision. Default: 128,000.
	ContextWindow int64
	// Prices by model name, looked up by Model and then by the model the
	// provider reports. Default: none (cost zero).
	Prices map[string]Price
	// ReasoningReplay: see Replay. Default: ReplayAuto.
	ReasoningReplay Replay
	// ReasoningField is the field reasoning is replayed in. Default:
	// "reasoning_content" (DeepSeek, Kimi).
	ReasoningField string
	// ExtraBody is merged into every request body, for provider switches
	// such as {"thinking": {"type": "enabled"}}. Default: none.
	ExtraBody map[string]any
	// HTTPClient carries the requests. Default: a new http.Client.
	HTTPClient *http.Client
	// Now tells the time (latency, Retry-After dates). Default: time.Now.
	Now func() time.Time
	// Sleep waits between attempts and returns early with ctx's error.
	// Default: a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Random returns a number in [0, 1) for jitter. Default: math/rand/v2.
	Random func() float64
	// Images, when set, returns the images (URLs, data: URLs included) a
	// tool result shows, for a model that accepts images. The images of
	// the tool results after the last assistant message, those the model
	// has not answered yet, follow them in a user message, at most
	// maxImages, so each is sent once and not with every later request.
	// Default: none.
	Images func(ctx context.Context, toolResult string) []string
	// Observe, when set, is told the outcome of every attempt, retries
	// included: nil for an answer, else the attempt's error. An attempt
	// cut short by ctx is not told. Default: none.
	Observe func(ctx context.Context, err error)
}

// Client sends chat completion requests for one configuration.
type Client struct {
	cfg    Config
	api    openai.Client
	retry  retry.Policy
	replay bool
}

// New returns a client for cfg.
func New(cfg Config) (*Client, error) {
	if cfg.Model == "" {
		return nil, errors.New("model client: no model configured")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = "https://api.openai.com/v1"
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("model client: invalid base URL %q", cfg.BaseURL)
	}
	host := strings.ToLower(u.Hostname())
	if cfg.MaxTokensField == "" {
		cfg.MaxTokensField = "max_tokens"
		if host == "api.openai.com" {
			cfg.MaxTokensField = "max_completion_tokens"
		}
	}
	if cfg.MaxTokensField != "max_tokens" && cfg.MaxTokensField != "max_completion_tokens" {
		return nil, fmt.Errorf("model client: unknown max tokens field %q", cfg.MaxTokensField)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Minute
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 6
	}
	if cfg.RetryBaseDelay <= 0 {
		cfg.RetryBaseDelay = time.Second
	}
	if cfg.RetryMaxDelay <= 0 {
		cfg.RetryMaxDelay = 2 * time.Minute
	}
	if cfg.ContextWindow <= 0 {
		cfg.ContextWindow = 128_000
	}
	if cfg.ReasoningField == "" {
		cfg.ReasoningField = "reasoning_content"
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = retry.Sleep
	}
	if cfg.Random == nil {
		cfg.Random = rand.Float64
	}
	var replay bool
	switch cfg.ReasoningReplay {
	case ReplayAuto:
		replay = RequiresReplay(host)
	case ReplayAlways:
		replay = true
	case ReplayNever:
	default:
		return nil, fmt.Errorf("model client: unknown reasoning replay setting %q", cfg.ReasoningReplay)
	}
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(cfg.HTTPClient),
		// Retries are ours: they use the injected clock and honour our caps.
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	return &Client{cfg: cfg, api: openai.NewClient(opts...), replay: replay, retry: retry.Policy{
		Retries: cfg.MaxRetries,
		// The backoff never passes RetryMaxDelay, so only a longer
		// Retry-After ends the loop here.
		MaxWait: cfg.RetryMaxDelay,
		Backoff: retry.Exponential(cfg.RetryBaseDelay, cfg.RetryMaxDelay, cfg.Random),
		Sleep:   cfg.Sleep,
	}}, nil
}

// RequiresReplay reports whether the provider at host wants reasoning text
// back on assistant messages that made tool calls.
func RequiresReplay(host string) bool {
	host = strings.ToLower(host)
	for _, p := range []string{"deepseek", "moonshot", "kimi"} {
		if strings.Contains(host, p) {
			return true
		}
	}
	return false
}

// Model is the configured model name.
func (c *Client) Model() string { return c.cfg.Model }

// ContextWindow is the configured context size in tokens.
func (c *Client) ContextWindow() int64 { return c.cfg.ContextWindow }

// ReplaysReasoning reports whether reasoning is sent back.
func (c *Client) ReplaysReasoning() bool { return c.replay }

// Complete sends req, retrying transient failures, and returns the first
// choice's answer with its usage priced. An answer that came back unusable
// (no choices, a refusal, cut at the output limit, empty) is returned as it
// is: Response.Fault names it, and the caller decides.
func (c *Client) Complete(ctx context.Context, req Request) (*Response, error) {
	params, err := c.params(req)
	if err == nil {
		c.showImages(ctx, req, &params)
	}
	if err != nil {
		return nil, err
	}
	var opts []option.RequestOption
	for k, v := range c.cfg.ExtraBody {
		opts = append(opts, option.WithJSONSet(k, v))
	}
	var comp *openai.ChatCompletion
	err = c.retry.Do(ctx, func(attempt int) error {
		var err error
		if comp, err = c.attempt(ctx, params, opts); err == nil {
			c.observe(ctx, nil)
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("requesting %s: %w", c.cfg.Model, ctx.Err())
		}
		err = fmt.Errorf("requesting %s (attempt %d): %w", c.cfg.Model, attempt+1, err)
		c.observe(ctx, err)
		if ok, after := retryable(err, c.cfg.Now()); ok {
			return retry.Again(err, after)
		}
		return err
	}, nil)
	if err != nil {
		return nil, err
	}
	return c.response(comp)
}

func (c *Client) observe(ctx context.Context, err error) {
	if c.cfg.Observe != nil {
		c.cfg.Observe(ctx, err)
	}
}

func (c *Client) attempt(ctx context.Context, params openai.ChatCompletionNewParams, opts []option.RequestOption) (*openai.ChatCompletion, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	return c.api.Chat.Completions.New(ctx, params, opts...)
}

func (c *Client) params(req Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{Model: c.cfg.Model}
	if c.cfg.MaxOutputTokens > 0 {
		if c.cfg.MaxTokensField == "max_tokens" {
			p.MaxTokens = openai.Int(c.cfg.MaxOutputTokens)
		} else {
			p.MaxCompletionTokens = openai.Int(c.cfg.MaxOutputTokens)
		}
	}
	p.Messages = make([]openai.ChatCompletionMessageParamUnion, 0, len(req.Messages)+1)
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	for i, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			p.Messages = append(p.Messages, openai.UserMessage(m.Content))
		case RoleTool:
			p.Messages = append(p.Messages, openai.ToolMessage(m.Content, m.ToolCallID))
		case RoleAssistant:
			p.Messages = append(p.Messages, c.assistant(m))
		default:
			return p, fmt.Errorf("message %d has unknown role %q", i, m.Role)
		}
	}
	for _, t := range req.Tools {
		fn := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		if len(t.Parameters) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(t.Parameters, &schema); err != nil {
				return p, fmt.Errorf("decoding parameters of tool %q: %w", t.Name, err)
			}
			fn.Parameters = schema
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	if req.NoToolCalls && len(p.Tools) > 0 {
		p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("none")}
	}
	return p, nil
}

func (c *Client) assistant(m Message) openai.ChatCompletionMessageParamUnion {
	a := openai.ChatCompletionAssistantMessageParam{}
	if m.Content != "" || len(m.ToolCalls) == 0 {
		a.Content.OfString = openai.String(m.Content)
	}
	for _, tc := range m.ToolCalls {
		a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID:       tc.ID,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: tc.Arguments},
			},
		})
	}
	// DeepSeek and Kimi refuse a tool-calling turn whose reasoning is missing;
	// DeepSeek's older reasoner refused reasoning on plain answers, so only
	// tool-calling messages carry it.
	if c.replay && m.Reasoning != "" && len(m.ToolCalls) > 0 {
		a.SetExtraFields(map[string]any{c.cfg.ReasoningField: m.Reasoning})
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}
}

// messageExtras are the non-standard fields of an assistant message.
type messageExtras struct {
	ReasoningContent string          `json:"reasoning_content"`
	Reasoning        json.RawMessage `json:"reasoning"`
}

func (c *Client) response(comp *openai.ChatCompletion) (*Response, error) {
	u, err := ParseUsage([]byte(comp.Usage.RawJSON()))
	if err != nil {
		return nil, fmt.Errorf("requesting %s: %w", c.cfg.Model, err)
	}
	u.Cost = c.price(comp.Model).Cost(u)
	if len(comp.Choices) == 0 {
		// Some providers answer a filtered or failed generation so: the
		// caller decides whether to ask again (Response.Fault).
		return &Response{NoChoices: true, Model: comp.Model, Usage: u}, nil
	}
	choice := comp.Choices[0]
	msg := choice.Message
	out := &Response{Content: msg.Content, FinishReason: choice.FinishReason, Model: comp.Model, Refusal: msg.Refusal, Usage: u}
	if raw := msg.RawJSON(); raw != "" {
		var ex messageExtras
		if err := json.Unmarshal([]byte(raw), &ex); err == nil {
			out.Reasoning = ex.ReasoningContent
			var s string
			if out.Reasoning == "" && json.Unmarshal(ex.Reasoning, &s) == nil {
				out.Reasoning = s
			}
		}
	}
	for _, tc := range msg.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return out, nil
}

func (c *Client) price(reported string) Price {
	if p, ok := c.cfg.Prices[c.cfg.Model]; ok {
		return p
	}
	return c.cfg.Prices[reported]
}

// maxImages caps the images one request shows.
const maxImages = 4

// showImages appends the images of the tool results the model has not
// answered yet (Config.Images) to params, in a user message.
func (c *Client) showImages(ctx context.Context, req Request, params *openai.ChatCompletionNewParams) {
	if c.cfg.Images == nil {
		return
	}
	var urls []string
	for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role != RoleAssistant; i-- {
		if m := req.Messages[i]; m.Role == RoleTool {
			urls = append(c.cfg.Images(ctx, m.Content), urls...)
		}
	}
	if len(urls) == 0 {
		return
	}
	urls = urls[:min(len(urls), maxImages)]
	parts := []openai.ChatCompletionContentPartUnionParam{openai.TextContentPart("The images the tool results above returned, in order:")}
	for _, u := range urls {
		parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: u}))
	}
	params.Messages = append(params.Messages, openai.UserMessage(parts))
}
