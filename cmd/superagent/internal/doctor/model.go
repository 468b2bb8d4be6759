package doctor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/superagent-dev/superagent/internal/queue"
)

// model asks the endpoint base for a one-token completion from the named
// model with key: the cheapest request that proves the URL, the key and the
// model name. setting is the prefix of the role's settings, for the fixes.
func (d *doctor) model(base, key, setting, name string) func(ctx context.Context) Result {
	return func(ctx context.Context) Result {
		c := d.cfg
		if base == "" || name == "" {
			if n := d.waitingForAModel(ctx); n > 0 {
				return warn("set "+setting+", "+setting+"_BASE_URL and "+setting+"_API_KEY here, or start a process that has them: a process without a model leaves these jobs to one with it",
					"no model is configured, and %d routing or Executor jobs wait for a process with one", n)
			}
			return skip("not checked: the model settings are incomplete")
		}
		opts := []option.RequestOption{
			option.WithBaseURL(base),
			option.WithHTTPClient(c.HTTPClient),
			option.WithMaxRetries(0),
		}
		if key != "" {
			opts = append(opts, option.WithAPIKey(key))
		}
		// The service, not the client, reads the environment: build the
		// service without openai.NewClient's OPENAI_* defaults.
		chat := openai.NewChatCompletionService(opts...)
		params := openai.ChatCompletionNewParams{
			Model:    name,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Reply with OK.")},
		}
		// OpenAI's newer models take only max_completion_tokens; most other
		// providers read only max_tokens.
		if u, err := url.Parse(base); err == nil && u.Hostname() == "api.openai.com" {
			params.MaxCompletionTokens = openai.Int(1)
		} else {
			params.MaxTokens = openai.Int(1)
		}
		resp, err := chat.New(ctx, params)
		if err != nil {
			return modelFailure(err, base, setting, name)
		}
		served := resp.Model
		if served == "" {
			served = name
		}
		return ok("%s answered a one-token request (served by %s; %d tokens used)", base, served, resp.Usage.TotalTokens)
	}
}

// waitingForAModel counts the jobs waiting in the queues only a process
// with a model works; 0 when the database is unreachable.
func (d *doctor) waitingForAModel(ctx context.Context) int {
	if d.db == nil {
		return 0
	}
	n, _ := queue.WaitingForRoles(ctx, d.db)
	return n
}

func modelFailure(err error, base, setting, name string) Result {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		msg := apiErr.Message
		if msg == "" {
			msg = http.StatusText(apiErr.StatusCode)
		}
		switch apiErr.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return fail("check "+setting+"_API_KEY: it must be a key for "+base, "the endpoint refused the API key (HTTP %d): %s", apiErr.StatusCode, msg)
		case http.StatusNotFound:
			fix := fmt.Sprintf("check the model name %q against the provider's list", name)
			if !strings.HasSuffix(strings.TrimRight(base, "/"), "/v1") {
				fix += ", and " + setting + "_BASE_URL: most endpoints end in /v1"
			}
			return fail(fix, "HTTP 404 for model %s: %s", name, msg)
		case http.StatusTooManyRequests:
			return warn("the key works but is rate-limited or out of quota: check the provider's billing and limits",
				"HTTP 429 from %s: %s", base, msg)
		case http.StatusBadRequest:
			return fail(fmt.Sprintf("check that %q is a chat model this endpoint serves", name), "the endpoint refused the request (HTTP 400): %s", msg)
		}
		return fail("retry later, or check the provider's status page", "HTTP %d from %s: %s", apiErr.StatusCode, base, msg)
	}
	return fail("check "+setting+"_BASE_URL and that this machine reaches it (proxy, firewall, DNS)",
		"cannot reach %s: %v", base, err)
}
