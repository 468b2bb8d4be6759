package queue

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"riverqueue.com/riverui"
	"riverqueue.com/riverui/uiendpoints"
)

// UIHandler returns River's job UI, serving under prefix (for example
// "/admin/jobs"). Put authentication in front of it: it can cancel and
// retry jobs. Job arguments are hidden by default in the list, since they
// can carry message text.
func (q *Queue) UIHandler(ctx context.Context, prefix string, logger *slog.Logger) (http.Handler, error) {
	var endpoints uiendpoints.Bundle
	switch {
	case q.pg != nil:
		endpoints = riverui.NewEndpoints(q.pg, nil)
	case q.lite != nil:
		endpoints = riverui.NewEndpoints(q.lite, nil)
	default:
		return nil, ErrNotInitialized
	}
	h, err := riverui.NewHandler(&riverui.HandlerOpts{
		Endpoints:                endpoints,
		JobListHideArgsByDefault: true,
		Logger:                   quiet(logger),
		Prefix:                   prefix,
	})
	if err != nil {
		return nil, fmt.Errorf("creating job UI: %w", err)
	}
	if err := h.Start(ctx); err != nil {
		return nil, fmt.Errorf("starting job UI: %w", err)
	}
	return withPolicy(h), nil
}

// UIContentSecurityPolicy is the job UI's Content-Security-Policy, as strict
// as River UI's built page works under (checked in a browser by
// admin.TestBrowserJobs): it loads only its own scripts, styles and images
// and calls only its own API, so nothing else may load; no inline or
// evaluated script runs (its schema library probes eval and falls back);
// and no other site may frame it (its buttons cancel and retry jobs). The
// one allowance is style elements: two of its libraries (themes, toasts)
// write <style> elements at run time, without a nonce. Style attributes
// stay refused.
const UIContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; style-src-elem 'self' 'unsafe-inline'; " +
	"style-src-attr 'none'; img-src 'self' data:; font-src 'self'; connect-src 'self'; form-action 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'; object-src 'none'"

// withPolicy sets the job UI's Content-Security-Policy on every answer.
func withPolicy(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", UIContentSecurityPolicy)
		h.ServeHTTP(w, r)
	})
}
