package feishu

import (
	"context"
	"fmt"
	"log/slog"
)

// sdkLogger adapts slog to the SDK's logger interface.
type sdkLogger struct{ l *slog.Logger }

func (s sdkLogger) log(ctx context.Context, level slog.Level, args []any) {
	if s.l == nil {
		return
	}
	s.l.Log(ctx, level, "feishu sdk: "+fmt.Sprint(args...))
}

func (s sdkLogger) Debug(ctx context.Context, args ...any) { s.log(ctx, slog.LevelDebug, args) }
func (s sdkLogger) Info(ctx context.Context, args ...any)  { s.log(ctx, slog.LevelInfo, args) }
func (s sdkLogger) Warn(ctx context.Context, args ...any)  { s.log(ctx, slog.LevelWarn, args) }
func (s sdkLogger) Error(ctx context.Context, args ...any) { s.log(ctx, slog.LevelError, args) }
