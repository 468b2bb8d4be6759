package queue

import (
	"context"
	"log/slog"
)

// quiet returns a logger that writes River's INFO lines (client started,
// leadership, producers' comings and goings) at DEBUG, so that a service
// log at INFO tells the work's story rather than the queue's. Warnings and
// errors keep their level.
func quiet(l *slog.Logger) *slog.Logger {
	return slog.New(demoted{l.Handler()})
}

// demoted lowers records below WARN to DEBUG.
type demoted struct{ h slog.Handler }

func (d demoted) Enabled(ctx context.Context, l slog.Level) bool { return d.h.Enabled(ctx, lower(l)) }

func (d demoted) Handle(ctx context.Context, r slog.Record) error {
	r.Level = lower(r.Level)
	return d.h.Handle(ctx, r)
}

func (d demoted) WithAttrs(as []slog.Attr) slog.Handler { return demoted{d.h.WithAttrs(as)} }
func (d demoted) WithGroup(name string) slog.Handler    { return demoted{d.h.WithGroup(name)} }

func lower(l slog.Level) slog.Level {
	if l < slog.LevelWarn {
		return slog.LevelDebug
	}
	return l
}
