package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// healthcheck asks a local process's /readyz. It prints nothing when the
// process is ready, so that a container engine's health log stays quiet.
func healthcheck(args []string, getenv func(string) string, _, stderr io.Writer) int {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", "", "")
	timeout := fs.Duration("timeout", 5*time.Second, "")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "superagent healthcheck: unexpected arguments; see superagent healthcheck --help")
		return 2
	}
	if *addr == "" {
		*addr = or(getenv("SUPERAGENT_ADDR"), ":8080")
	}
	target, err := localURL(*addr)
	if err != nil {
		fmt.Fprintln(stderr, "superagent healthcheck:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := ready(ctx, target); err != nil {
		fmt.Fprintln(stderr, "superagent healthcheck:", err)
		return 1
	}
	return 0
}

// localURL is the /readyz URL of a listen address: a host left out, or a
// wildcard, is the loopback interface (serviceURL).
func localURL(addr string) (string, error) {
	base, err := baseURL(addr)
	if err != nil {
		return "", fmt.Errorf("address %q: want host:port or :port", addr)
	}
	return base + "/readyz", nil
}

func ready(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%s did not answer in time", url)
		}
		return fmt.Errorf("%s: %w", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// workerFlags applies the worker command's flags over the configuration.
func workerFlags(cfg *config, args []string) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	metrics := fs.String("metrics-addr", cfg.MetricsAddr, "")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w; see superagent worker --help", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q; see superagent worker --help", fs.Arg(0))
	}
	if *metrics != "" {
		if err := checkAddr("--metrics-addr", *metrics); err != nil {
			return err
		}
	}
	cfg.MetricsAddr = *metrics
	return nil
}
