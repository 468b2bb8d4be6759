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
	return h, nil
}
