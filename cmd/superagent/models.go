package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"time"

	"github.com/superagent-dev/superagent/internal/model"
	"github.com/superagent-dev/superagent/internal/modelhealth"
	"github.com/superagent-dev/superagent/shots"
)

// roleModel is the model settings of one role: the Executors
// (SUPERAGENT_MODEL_*) or the main Session (SUPERAGENT_ROUTER_MODEL_*).
type roleModel struct {
	BaseURL string
	APIKey  string
	Model   string
	// MaxOutputTokens caps each answer; 0 is the provider's default.
	MaxOutputTokens int64
	// Timeout bounds one attempt; 0 is the client's default (10 minutes).
	Timeout time.Duration
	// ContextWindow is the model's context in tokens; 0 is the client's
	// default (128,000).
	ContextWindow int64
	Price         *model.Price
}

// config is the model client configuration of the role.
func (m roleModel) config() model.Config {
	var prices map[string]model.Price
	if m.Price != nil {
		prices = map[string]model.Price{m.Model: *m.Price}
	}
	return model.Config{BaseURL: m.BaseURL, APIKey: m.APIKey, Model: m.Model, MaxOutputTokens: m.MaxOutputTokens,
		Timeout: m.Timeout, ContextWindow: m.ContextWindow, Prices: prices}
}

// client is the model client of the role.
func (m roleModel) client() (*model.Client, error) { return model.New(m.config()) }

// watchedClient is the model client of the role whose every attempt
// w records (see modelhealth.Watch).
// images, if not nil, is model.Config.Images.
func (m roleModel) watchedClient(w *modelhealth.Watch, images func(context.Context, string) []string) (*model.Client, error) {
	cfg := m.config()
	cfg.Observe = w.Observe
	cfg.Images = images
	return model.New(cfg)
}

// shotImages is model.Config.Images for SUPERAGENT_MODEL_IMAGES: the
// screenshots under publicURL a tool result links to, as data: URLs, so
// the provider need not reach the service.
func shotImages(store *shots.Store, publicURL string) func(context.Context, string) []string {
	return func(ctx context.Context, result string) []string {
		var out []string
		for _, token := range shots.Linked(result, publicURL) {
			data, err := store.PNG(ctx, token)
			if err != nil {
				continue
			}
			out = append(out, "data:image/png;base64,"+base64.StdEncoding.EncodeToString(data))
		}
		return out
	}
}

// loadModelSettings reads both roles' model settings and the per-Ticket
// cost cap. Every router setting defaults to the executor's, except that
// the executor's API key is used for the router only when both talk to
// the same endpoint: a key is never sent to a host it was not given for.
func loadModelSettings(c *config, getenv func(string) string) error {
	c.ExecutorModel = roleModel{BaseURL: c.ModelBaseURL, APIKey: c.ModelAPIKey, Model: c.Model, Price: c.ModelPrice}
	var err error
	if c.ExecutorModel.MaxOutputTokens, err = parseTokens("SUPERAGENT_MODEL_MAX_OUTPUT_TOKENS", getenv("SUPERAGENT_MODEL_MAX_OUTPUT_TOKENS")); err != nil {
		return err
	}
	if c.ExecutorModel.ContextWindow, err = parseTokens("SUPERAGENT_MODEL_CONTEXT_WINDOW", getenv("SUPERAGENT_MODEL_CONTEXT_WINDOW")); err != nil {
		return err
	}
	if v := getenv("SUPERAGENT_MODEL_TIMEOUT"); v != "" {
		if c.ExecutorModel.Timeout, err = parseDuration("SUPERAGENT_MODEL_TIMEOUT", v, 0); err != nil {
			return err
		}
	}

	r := c.ExecutorModel
	r.Model, r.Price = c.RouterModel, c.RouterModelPrice
	if v := getenv("SUPERAGENT_ROUTER_MODEL_BASE_URL"); v != "" && v != c.ModelBaseURL {
		if err := checkBaseURL("SUPERAGENT_ROUTER_MODEL_BASE_URL", v); err != nil {
			return err
		}
		r.BaseURL, r.APIKey = v, ""
	}
	if v := getenv("SUPERAGENT_ROUTER_MODEL_API_KEY"); v != "" {
		r.APIKey = v
	}
	for _, s := range []struct {
		name string
		dst  *int64
	}{{"SUPERAGENT_ROUTER_MODEL_MAX_OUTPUT_TOKENS", &r.MaxOutputTokens}, {"SUPERAGENT_ROUTER_MODEL_CONTEXT_WINDOW", &r.ContextWindow}} {
		if v := getenv(s.name); v != "" {
			if *s.dst, err = parseTokens(s.name, v); err != nil {
				return err
			}
		}
	}
	if v := getenv("SUPERAGENT_ROUTER_MODEL_TIMEOUT"); v != "" {
		if r.Timeout, err = parseDuration("SUPERAGENT_ROUTER_MODEL_TIMEOUT", v, 0); err != nil {
			return err
		}
	}
	c.Router = r

	if v := getenv("SUPERAGENT_TICKET_COST_BUDGET"); v != "" {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || n < 0 {
			return &settingError{"SUPERAGENT_TICKET_COST_BUDGET", fmt.Sprintf("must be an amount in the model prices' currency (0 for none), got %q", v)}
		}
		if n > 0 && c.ModelPrice == nil {
			return &settingError{"SUPERAGENT_TICKET_COST_BUDGET", "needs SUPERAGENT_MODEL_PRICE: without a price every request costs 0 and the cap never stops anything"}
		}
		c.TicketCostBudget = n
	}
	return nil
}

// parseTokens reads a positive number of tokens; empty means 0, the
// default.
func parseTokens(name, v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, &settingError{name, fmt.Sprintf("must be a positive number of tokens, got %q", v)}
	}
	return n, nil
}
