package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/internal/probe"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/migrations"
	"github.com/superagent-dev/superagent/promptparts"
)

func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}

func migrate(ctx context.Context, cfg *config, stderr io.Writer) error {
	logger := newLogger(stderr, cfg.LogLevel)
	d, err := db.Open(ctx, cfg.DatabaseURL, db.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	if err := migrations.Apply(ctx, d, logger); err != nil {
		return err
	}
	logger.Info("database is up to date", "dialect", d.Dialect())
	return nil
}

// serve runs one process: workers always, and with withHTTP the HTTP server
// too (and migrations at start). It returns when ctx ends, after a graceful
// shutdown bounded by cfg.ShutdownTimeout.
func serve(ctx context.Context, cfg *config, stdout, stderr io.Writer, withHTTP bool) error {
	logger := newLogger(stderr, cfg.LogLevel)
	d, err := db.Open(ctx, cfg.DatabaseURL, db.Options{})
	if err != nil {
		return err
	}
	defer d.Close()

	if withHTTP {
		if err := migrations.Apply(ctx, d, logger); err != nil {
			return err
		}
	} else if err := waitForMigrations(ctx, d, logger); err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	prompts, err := promptparts.New(promptparts.Config{Logger: logger}, d)
	if err != nil {
		return err
	}
	if err := prompts.Start(ctx); err != nil {
		return err
	}
	defer prompts.Stop()

	q := queue.New(d, queue.Config{Logger: logger, Registerer: reg, RescueAfter: cfg.RescueAfter})
	queue.AddWorker(q, probe.NewWorker(d, q.ID(), time.Now))
	if err := q.Init(); err != nil {
		return err
	}

	var srv *http.Server
	var ln net.Listener
	if withHTTP {
		token, err := ensureAdminToken(cfg.AdminToken, cfg.DataDir, stdout)
		if err != nil {
			return err
		}
		var migrated atomic.Bool
		hs := httpserver.New(httpserver.Config{
			Logger:         logger,
			Registerer:     reg,
			Gatherer:       reg,
			Ready:          readiness(d, &migrated),
			Authenticators: []httpserver.Authenticator{httpserver.BearerToken{Token: token}},
		})
		prompts.Routes(hs.API)
		srv = &http.Server{
			Handler:           hs,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       2 * time.Minute,
			ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		}
		if ln, err = (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Addr); err != nil {
			return fmt.Errorf("listening on %s: %w", cfg.Addr, err)
		}
	}

	if err := q.Start(ctx); err != nil {
		return err
	}
	httpErr := make(chan error, 1)
	if srv != nil {
		logger.Info("serving", "addr", ln.Addr().String(), "dialect", d.Dialect(), "worker_id", q.ID())
		go func() { httpErr <- srv.Serve(ln) }()
	} else {
		logger.Info("working", "dialect", d.Dialect(), "worker_id", q.ID())
	}

	var runErr error
	select {
	case <-ctx.Done():
		logger.Info("shutting down", "deadline", cfg.ShutdownTimeout)
	case err := <-httpErr:
		runErr = fmt.Errorf("HTTP server: %w", err)
	}

	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	if srv != nil {
		if err := srv.Shutdown(shutdownCtx); err != nil {
			logger.Warn("HTTP shutdown incomplete", "error", err)
		}
	}
	if err := q.Stop(shutdownCtx); err != nil {
		return errors.Join(runErr, err)
	}
	logger.Info("stopped")
	return runErr
}

// readiness reports ready once the database answers and every migration is
// applied; after the first success only the ping is repeated.
func readiness(d *db.DB, migrated *atomic.Bool) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if err := d.Ping(ctx); err != nil {
			return fmt.Errorf("database unreachable: %w", err)
		}
		if migrated.Load() {
			return nil
		}
		pending, err := migrations.Pending(ctx, d)
		if err != nil {
			return err
		}
		if pending {
			return errors.New("database migrations pending")
		}
		migrated.Store(true)
		return nil
	}
}

// waitForMigrations lets a worker start beside a serve process that is
// still migrating, instead of failing at once.
func waitForMigrations(ctx context.Context, d *db.DB, logger *slog.Logger) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		pending, err := migrations.Pending(ctx, d)
		if err == nil && !pending {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("checking migrations: %w", err)
			}
			return errors.New("database schema is not up to date: run `superagent migrate` (or start `superagent serve`) first")
		}
		logger.Info("waiting for database migrations", "error", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}
