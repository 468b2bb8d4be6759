package secret

import (
	"context"
	"fmt"
	"log/slog"
)

// Handler wraps an slog.Handler so that no record it passes on carries a
// known secret: the message and every string-like attribute value (errors,
// Stringers and other values are formatted first) go through the Scrubber.
type Handler struct {
	next     slog.Handler
	scrubber *Scrubber
}

var _ slog.Handler = (*Handler)(nil)

// NewHandler returns a Handler that scrubs records before next sees them.
func NewHandler(next slog.Handler, s *Scrubber) *Handler {
	return &Handler{next: next, scrubber: s}
}

// Enabled defers to the wrapped handler.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle scrubs the record and passes it on.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.scrubber.Scrub(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

// WithAttrs scrubs the attributes once, when they are attached.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = h.attr(a)
	}
	return &Handler{next: h.next.WithAttrs(clean), scrubber: h.scrubber}
}

// WithGroup defers to the wrapped handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), scrubber: h.scrubber}
}

func (h *Handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.scrubber.Scrub(v.String()))
	case slog.KindGroup:
		group := v.Group()
		clean := make([]any, len(group))
		for i, g := range group {
			clean[i] = h.attr(g)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		// Errors, URLs, byte slices and structs are formatted as text so the
		// scrubber can see what a handler would print.
		return slog.String(a.Key, h.scrubber.Scrub(fmt.Sprint(v.Any())))
	default:
		return slog.Attr{Key: a.Key, Value: v}
	}
}
