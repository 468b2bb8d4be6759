package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// GitHub's deliveries come from GitHub's machines. A load generator inside
// the measured process shares its Go scheduler: its goroutines queue with
// the handler's for the same Ps, and a response the handler has written
// waits for the client goroutine to be scheduled, which counts as
// acknowledgement latency. -generator process posts the deliveries from a
// second bench process instead (this binary, run with -generate), which
// shares only the machine's cores. It is not the default: on two cores the
// hand-offs between processes cost the PostgreSQL figures about a tenth of
// their rate, and the SQLite tail it narrows stays above its goal (see
// docs/benchmarks.md).

// generatorEnv marks a bench process started to generate load, so that a
// -generate passed by hand is refused.
const generatorEnv = "SUPERAGENT_BENCH_GENERATOR"

// generated is what a generator process reports on its standard output
// once its load is done: how long it took, and every request's latency.
type generated struct {
	ElapsedNS   int64   `json:"elapsed_ns"`
	LatenciesNS []int64 `json:"latencies_ns"`
	Error       string  `json:"error,omitempty"`
}

// generatorStarted is the line a generator prints just before its first
// request, so the caller's clock starts with the load, not with the
// process.
const generatorStarted = "started"

// load posts the deliveries as post does, from this process (inline) or
// from a generator process, and returns their result with the moment the
// first request was about to leave.
func load(ctx context.Context, inline bool, url, prefix string, n, concurrency, issues int) (result, time.Time, error) {
	if inline {
		began := time.Now()
		res, err := post(ctx, url, prefix, n, concurrency, issues)
		return res, began, err
	}
	self, err := os.Executable()
	if err != nil {
		return result{}, time.Time{}, fmt.Errorf("finding this binary to start a load generator: %w", err)
	}
	cmd := exec.CommandContext(ctx, self, "-generate", url, "-prefix", prefix,
		"-n", strconv.Itoa(n), "-c", strconv.Itoa(concurrency), "-issues", strconv.Itoa(issues))
	cmd.Env = append(os.Environ(), generatorEnv+"=1")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return result{}, time.Time{}, err
	}
	if err := cmd.Start(); err != nil {
		return result{}, time.Time{}, fmt.Errorf("starting the load generator: %w", err)
	}
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	began := time.Now()
	if err != nil || line != generatorStarted+"\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if err == nil {
			err = fmt.Errorf("it said %q", line)
		}
		return result{}, time.Time{}, fmt.Errorf("the load generator did not start: %w", err)
	}
	var g generated
	decodeErr := json.NewDecoder(out).Decode(&g)
	_, _ = io.Copy(io.Discard, out)
	waitErr := cmd.Wait()
	switch {
	case decodeErr != nil:
		return result{}, time.Time{}, fmt.Errorf("reading the load generator's report: %w (exit: %w)", decodeErr, waitErr)
	case g.Error != "":
		return result{}, time.Time{}, errors.New(g.Error)
	case waitErr != nil:
		return result{}, time.Time{}, fmt.Errorf("the load generator failed: %w", waitErr)
	}
	res := result{elapsed: time.Duration(g.ElapsedNS), latencies: make([]time.Duration, len(g.LatenciesNS))}
	for i, ns := range g.LatenciesNS {
		res.latencies[i] = time.Duration(ns)
	}
	return res, began, nil
}

// generate is a generator process's whole life: post, then report.
func generate(url, prefix string, n, concurrency, issues int) error {
	if os.Getenv(generatorEnv) == "" {
		return errors.New("-generate is how one bench process asks another for load; run the bench without it")
	}
	w := bufio.NewWriter(os.Stdout)
	if _, err := fmt.Fprintln(w, generatorStarted); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	res, err := post(context.Background(), url, prefix, n, concurrency, issues)
	g := generated{ElapsedNS: int64(res.elapsed), LatenciesNS: make([]int64, len(res.latencies))}
	for i, d := range res.latencies {
		g.LatenciesNS[i] = int64(d)
	}
	if err != nil {
		g.Error = err.Error()
	}
	if err := json.NewEncoder(w).Encode(g); err != nil {
		return err
	}
	return w.Flush()
}
