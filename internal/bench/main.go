// Command bench is `make bench`: it measures superagent's figures on both
// databases and prints each against a baseline measured in the same run, so
// the ratios hold on whatever machine runs it. Nothing here asserts a time.
//
// The PostgreSQL half runs when SUPERAGENT_TEST_DATABASE_URL is set; each
// run uses a schema of its own, dropped at the end.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/gcfloor"
	"github.com/superagent-dev/superagent/internal/probe"
	"github.com/superagent-dev/superagent/internal/queue"
)

func main() {
	n := flag.Int("n", 4000, "operations per measurement")
	concurrency := flag.Int("c", 8, "concurrent clients")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	only := flag.String("db", "", "measure on this database only: sqlite or postgresql (default both)")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	// As cmd/superagent runs the service (the load generator shares it).
	gcfloor.Keep(gcfloor.DefaultFloor)
	if err := run(context.Background(), *n, *concurrency, *only); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1) //nolint:gocritic // the profile was stopped just above
	}
}

func run(ctx context.Context, n, concurrency int, only string) error {
	targets, err := openTargets(ctx, only)
	if err != nil {
		return err
	}
	defer func() {
		for _, t := range targets {
			t.close()
		}
	}()
	fmt.Printf("superagent benchmarks: %d operations per measurement, concurrency %d\n\n", n, concurrency)
	for _, t := range targets {
		fmt.Printf("== %s\n", t.name)
		base, err := riverInsert(ctx, t.db, n, concurrency)
		if err != nil {
			return fmt.Errorf("%s: River insert baseline: %w", t.name, err)
		}
		fmt.Printf("  River single-job insert (baseline): %8.0f jobs/s   p50 %-9s p99 %s\n", base.perSecond(), base.p(50), base.p(99))
		in, err := ingest(ctx, t.db, n, concurrency)
		if err != nil {
			return fmt.Errorf("%s: ingestion: %w", t.name, err)
		}
		fmt.Printf("  GitHub webhook ingestion:           %8.0f deliveries/s   p50 %-9s p99 %-9s %.1f statements each\n", in.perSecond(), in.p(50), in.p(99), in.perOp())
		fmt.Printf("    ratio to baseline %.0f%% (goal ≥ 60%%); p99/p50 %.1f (goal ≤ 4)\n",
			100*in.perSecond()/base.perSecond(), float64(in.p(99))/float64(max(in.p(50), 1)))
		for _, issues := range []int{1, 50} {
			sv, err := carded(ctx, t.db, n, concurrency, issues)
			if err != nil {
				return fmt.Errorf("%s: the whole service: %w", t.name, err)
			}
			fmt.Printf("  Acknowledged and carded, workers on, %2d issue(s): %8.0f deliveries/s   ack p50 %-9s p99 %-9s %.1f statements each\n", issues, sv.perSecond(), sv.p(50), sv.p(99), sv.perOp())
			fmt.Printf("    ratio to baseline %.0f%% (goal ≥ %d%%); ack p99/p50 %.1f (goal ≤ 3)\n",
				100*sv.perSecond()/base.perSecond(), t.servedGoal, float64(sv.p(99))/float64(max(sv.p(50), 1)))
		}
		fmt.Println()
	}
	return nil
}

// result is a measured run: how many operations took how long, and each
// operation's latency.
type result struct {
	elapsed   time.Duration
	latencies []time.Duration
	// statements is how many the database was sent meanwhile.
	statements int64
}

// perOp is statements per operation.
func (r result) perOp() float64 { return float64(r.statements) / float64(max(len(r.latencies), 1)) }

func (r result) perSecond() float64 { return float64(len(r.latencies)) / r.elapsed.Seconds() }

func (r result) p(q int) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	i := (len(r.latencies) - 1) * q / 100
	return r.latencies[i].Round(time.Microsecond)
}

// measure runs op n times from concurrency goroutines.
func measure(n, concurrency int, op func(i int) error) (result, error) {
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				if err := op(i); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	return result{elapsed: elapsed, latencies: lat}, firstErr
}

// riverInsert is the baseline: River's own single-job Insert, one job per
// call, through an insert-only client.
func riverInsert(ctx context.Context, d *db.DB, n, concurrency int) (result, error) {
	q := queue.New(d, queue.Config{InsertOnly: true, ID: "bench"})
	if err := q.Init(); err != nil {
		return result{}, err
	}
	return measure(n, concurrency, func(int) error {
		_, err := q.Insert(ctx, probe.Args{}, nil)
		return err
	})
}
