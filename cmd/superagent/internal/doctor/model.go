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
)

// model asks the endpoint for a one-token completion from the named model:
// the cheapest request that proves the URL, the key and the model name.
func (d *doctor) model(name string) func(ctx context.Context) Result {
	return func(ctx context.Context) Result {
		c := d.cfg
		if c.ModelBaseURL == "" || name == "" {
			return skip("not checked: the model settings are incomplete")
		}
		opts := []option.RequestOption{
			option.WithBaseURL(c.ModelBaseURL),
			option.WithHTTPClient(c.HTTPClient),
			option.WithMaxRetries(0),
		}
		if c.ModelAPIKey != "" {
			opts = append(opts, option.WithAPIKey(c.ModelAPIKey))
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
		if u, err := url.Parse(c.ModelBaseURL); err == nil && u.Hostname() == "api.openai.com" {
			params.MaxCompletionTokens = openai.Int(1)
		} else {
			params.MaxTokens = openai.Int(1)
		}
		resp, err := chat.New(ctx, params)
		if err != nil {
			return modelFailure(err, c.ModelBaseURL, name)
		}
		served := resp.Model
		if served == "" {
			served = name
		}
		return ok("%s answered a one-token request (served by %s; %d tokens used)", c.ModelBaseURL, served, resp.Usage.TotalTokens)
	}
}

func modelFailure(err error, base, name string) Result {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		msg := apiErr.Message
		if msg == "" {
			msg = http.StatusText(apiErr.StatusCode)
		}
		switch apiErr.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return fail("check SUPERAGENT_MODEL_API_KEY: it must be a key for "+base, "the endpoint refused the API key (HTTP %d): %s", apiErr.StatusCode, msg)
		case http.StatusNotFound:
			fix := fmt.Sprintf("check the model name %q against the provider's list", name)
			if !strings.HasSuffix(strings.TrimRight(base, "/"), "/v1") {
				fix += ", and SUPERAGENT_MODEL_BASE_URL: most endpoints end in /v1"
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
	return fail("check SUPERAGENT_MODEL_BASE_URL and that this machine reaches it (proxy, firewall, DNS)",
		"cannot reach %s: %v", base, err)
}
