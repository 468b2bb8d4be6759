package githubapp

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/superagent-dev/superagent/internal/metric"
)

// metrics of outgoing GitHub calls. The collectors always exist; they are
// only exported when Config.Registerer is set.
type metrics struct {
	requests    *prometheus.CounterVec
	rateLimited *prometheus.CounterVec
	waits       *prometheus.CounterVec
	waitSeconds *prometheus.CounterVec
	remaining   *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "superagent_github_requests_total",
			Help: "HTTP requests to the GitHub API (each retry counts) by installation id or \"app\", method class (read, write) and status class (2xx…5xx, error).",
		}, []string{"installation", "method", "status"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "superagent_github_rate_limited_total",
			Help: "GitHub answers that were rate limits, by installation and reason (too_many_requests: 429; secondary: 403 secondary limit; primary: 403 with the quota used up).",
		}, []string{"installation", "reason"}),
		waits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "superagent_github_rate_limit_waits_total",
			Help: "Waits before a GitHub request, by installation and reason (retry_after: after a 429; pacing: local write pacing).",
		}, []string{"installation", "reason"}),
		waitSeconds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "superagent_github_rate_limit_wait_seconds_total",
			Help: "Seconds spent waiting before GitHub requests, by installation and reason (retry_after, pacing).",
		}, []string{"installation", "reason"}),
		remaining: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "superagent_github_rate_limit_remaining",
			Help: "X-RateLimit-Remaining of the latest GitHub answer, by installation (or \"app\") and rate-limit resource (core, search, graphql…).",
		}, []string{"installation", "resource"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.requests, err = registerGitHub(reg, m.requests); err != nil {
		return nil, err
	}
	if m.rateLimited, err = registerGitHub(reg, m.rateLimited); err != nil {
		return nil, err
	}
	if m.waits, err = registerGitHub(reg, m.waits); err != nil {
		return nil, err
	}
	if m.waitSeconds, err = registerGitHub(reg, m.waitSeconds); err != nil {
		return nil, err
	}
	if m.remaining, err = registerGitHub(reg, m.remaining); err != nil {
		return nil, err
	}
	return m, nil
}

// registerGitHub registers one collector, sharing it with other Clients on
// the same registry.
func registerGitHub[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	c, err := metric.Register(reg, c)
	if err != nil {
		return c, fmt.Errorf("registering GitHub client metrics: %w", err)
	}
	return c, nil
}

// observe records one answer (or transport error) and returns resp, whose
// body may have been re-wrapped to look for a secondary-limit message.
func (m *metrics) observe(inst string, req *http.Request, resp *http.Response, err error) *http.Response {
	status := "error"
	if err == nil && resp != nil {
		status = strconv.Itoa(resp.StatusCode/100) + "xx"
	}
	m.requests.WithLabelValues(inst, methodClass(req.Method), status).Inc()
	if err != nil || resp == nil {
		return resp
	}
	if v := resp.Header.Get("X-RateLimit-Remaining"); v != "" {
		if n, convErr := strconv.ParseFloat(v, 64); convErr == nil {
			m.remaining.WithLabelValues(inst, resource(resp.Header.Get("X-RateLimit-Resource"))).Set(n)
		}
	}
	var reason string
	reason, resp = rateLimitReason(resp)
	if reason != "" {
		m.rateLimited.WithLabelValues(inst, reason).Inc()
	}
	return resp
}

func (m *metrics) waited(inst, reason string, d time.Duration) {
	m.waits.WithLabelValues(inst, reason).Inc()
	m.waitSeconds.WithLabelValues(inst, reason).Add(d.Seconds())
}

// isWrite reports a content-creating method, which GitHub's secondary
// limits count.
func isWrite(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

func methodClass(method string) string {
	if isWrite(method) {
		return "write"
	}
	return "read"
}

var resourceName = regexp.MustCompile(`^[a-z_]{1,40}$`)

// resource names the rate-limit bucket; GitHub omits the header on some
// answers, which are core.
func resource(h string) string {
	switch {
	case h == "":
		return "core"
	case resourceName.MatchString(h):
		return h
	}
	return "other"
}

// rateLimitReason tells a rate-limit answer: any 429, or a 403 that is a
// secondary limit (Retry-After, or GitHub's message in the body) or an
// exhausted primary quota. Reading the body of a 403 puts it back.
func rateLimitReason(resp *http.Response) (string, *http.Response) {
	switch resp.StatusCode {
	case http.StatusTooManyRequests:
		return "too_many_requests", resp
	case http.StatusForbidden:
	default:
		return "", resp
	}
	if resp.Header.Get("Retry-After") != "" {
		return "secondary", resp
	}
	if resp.Header.Get("X-RateLimit-Remaining") == "0" {
		return "primary", resp
	}
	if resp.Body == nil || resp.Body == http.NoBody {
		return "", resp
	}
	head, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	if err == nil && strings.Contains(strings.ToLower(string(head)), "secondary rate limit") {
		return "secondary", resp
	}
	return "", resp
}
