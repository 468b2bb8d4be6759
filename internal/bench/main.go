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
	"slices"
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
	rounds := flag.Int("rounds", 3, "rounds of every measurement; each figure is flanked by baselines of its own")
	only := flag.String("db", "", "measure on this database only: sqlite or postgresql (default both)")
	carded := flag.Bool("carded", false, "measure only the figures people feel, the two acknowledged-and-carded ones (skip the issue-4 ingestion row)")
	generator := flag.String("generator", "inline", "where the webhook deliveries are posted from: inline (this process) or process (a bench process of their own, so the load shares only the cores with the service, not its Go scheduler)")
	generateFor := flag.String("generate", "", "(used by the bench itself) be the load generator: post to this URL and report")
	prefix := flag.String("prefix", "", "(with -generate) the delivery ids' prefix")
	issues := flag.Int("issues", 1, "(with -generate) how many issues the deliveries spread over")
	flag.Parse()
	if *generateFor != "" {
		if err := generate(*generateFor, *prefix, *n, *concurrency, *issues); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if *generator != "process" && *generator != "inline" {
		fmt.Fprintf(os.Stderr, "bench: -generator %q: want process or inline\n", *generator)
		os.Exit(2)
	}
	if *rounds < 1 || *n < 1 || *concurrency < 1 {
		fmt.Fprintln(os.Stderr, "bench: -n, -c and -rounds must be at least 1")
		os.Exit(2)
	}
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
	// As cmd/superagent runs the service (which the load generator shares
	// unless -generator process).
	gcfloor.Keep(gcfloor.DefaultFloor)
	if err := run(context.Background(), *n, *concurrency, *rounds, *only, *generator == "inline", *carded); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1) //nolint:gocritic // the profile was stopped just above
	}
}

func run(ctx context.Context, n, concurrency, rounds int, only string, inline, cardedOnly bool) error {
	// First, while nothing else of the bench runs: the stalls no code in
	// this process can avoid, which the figures' tails stand on.
	machine := measureHiccups(3 * time.Second)
	targets, err := openTargets(ctx, only)
	if err != nil {
		return err
	}
	defer func() {
		for _, t := range targets {
			t.close()
		}
	}()
	fmt.Printf("superagent benchmarks: %d operations per measurement, concurrency %d, %d rounds\n", n, concurrency, rounds)
	fmt.Println("River's insert is measured before every figure and after it, and each ratio is to the mean of")
	fmt.Println("the two, so a baseline that drifts while a round runs moves both sides of its ratio.")
	if inline {
		fmt.Println("Webhook deliveries are posted from this process (-generator inline).")
	} else {
		fmt.Println("Webhook deliveries are posted by a bench process of their own (-generator process).")
	}
	fmt.Printf("The machine itself: %s.\n", machine)
	fmt.Println()
	for _, t := range targets {
		fmt.Printf("== %s\n", t.name)
		if err := measureTarget(ctx, t, n, concurrency, rounds, inline, cardedOnly); err != nil {
			return err
		}
		fmt.Println()
	}
	return nil
}

// figure is one named measurement and what each round measured.
type figure struct {
	name   string
	goal   int     // the rate's goal, in percent of the baseline
	tail   float64 // the goal for p99 ÷ p50
	run    func(round int) (result, error)
	rounds []result
	ratios []float64 // each round's rate, in percent of the baselines either side of it
	// p99s is each round's ack p99 ÷ the p99 of the baselines either side
	// of it: how much tail the service adds to what one River insert on
	// the same machine, at the same moment, already has.
	p99s []float64
}

// measureTarget runs the rounds on one database and prints each round's
// figures, then their medians and ranges.
func measureTarget(ctx context.Context, t target, n, concurrency, rounds int, inline, cardedOnly bool) error {
	cardedOn := func(issues int) func(int) (result, error) {
		return func(int) (result, error) { return carded(ctx, t.db, n, concurrency, issues, inline) }
	}
	figures := []*figure{
		{name: "GitHub webhook ingestion (acknowledged, workers off)", goal: 60, tail: 4, run: func(round int) (result, error) {
			return ingest(ctx, t.db, n, concurrency, fmt.Sprint("bench-", round), inline)
		}},
		{name: "Acknowledged and carded, workers on, 1 issue", goal: t.servedGoal, tail: 3, run: cardedOn(1)},
		{name: "Acknowledged and carded, workers on, 50 issues", goal: t.servedGoal, tail: 3, run: cardedOn(50)},
	}
	if cardedOnly {
		figures = figures[1:]
	}
	// Each figure is flanked by two baselines, and its ratio is to their
	// mean: on this kind of machine River's insert alone moves by a
	// quarter between measurements a few seconds apart.
	var bases []result
	base := func() (result, error) {
		b, err := riverInsert(ctx, t.db, n, concurrency)
		if err != nil {
			return result{}, fmt.Errorf("%s: River insert baseline: %w", t.name, err)
		}
		bases = append(bases, b)
		return b, nil
	}
	printBase := func(lead string, b result) {
		fmt.Printf("%sRiver single-job insert (baseline) %6.0f jobs/s, p50 %s, p99 %s\n", lead, b.perSecond(), b.p(50), b.p(99))
	}
	for round := 1; round <= rounds; round++ {
		before, err := base()
		if err != nil {
			return err
		}
		printBase(fmt.Sprintf("  round %d: ", round), before)
		for _, f := range figures {
			r, err := f.run(round)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", t.name, f.name, err)
			}
			after, err := base()
			if err != nil {
				return err
			}
			ratio := 100 * r.perSecond() / ((before.perSecond() + after.perSecond()) / 2)
			p99 := float64(r.p(99)) / (float64(before.p(99)+after.p(99)) / 2)
			f.rounds = append(f.rounds, r)
			f.ratios = append(f.ratios, ratio)
			f.p99s = append(f.p99s, p99)
			fmt.Printf("    %-52s %6.0f/s (%3.0f%%), ack p50 %-9s p99 %-9s (%.1f; %.2f× the baseline's p99), %.1f statements each\n",
				f.name, r.perSecond(), ratio, r.p(50), r.p(99), r.tailRatio(), p99, r.perOp())
			printBase("      ", after)
			before = after
		}
	}
	fmt.Printf("  over %d rounds, median [lowest – highest]; a figure's ratio is to the baselines either side of it:\n", rounds)
	fmt.Printf("    %-52s %s jobs/s, p99/p50 %s\n", "River single-job insert (baseline)",
		spread(bases, result.perSecond, "%.0f"),
		spread(bases, result.tailRatio, "%.1f"))
	for _, f := range figures {
		fmt.Printf("    %-52s %s%% of the baseline (goal ≥ %d%%); ack p99/p50 %s (goal ≤ %.0f); ack p99 %s× the baseline's\n", f.name,
			spreadOf(f.ratios, "%.0f"), f.goal, spread(f.rounds, result.tailRatio, "%.1f"), f.tail, spreadOf(f.p99s, "%.2f"))
	}
	return nil
}

// spread is spreadOf the values of rs.
func spread(rs []result, value func(result) float64, format string) string {
	vs := make([]float64, len(rs))
	for i, r := range rs {
		vs[i] = value(r)
	}
	return spreadOf(vs, format)
}

// spreadOf formats the median of vs and, with more than one, the range:
// "52 [48 – 61]".
func spreadOf(vs []float64, format string) string {
	sorted := slices.Clone(vs)
	slices.Sort(sorted)
	median := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		median = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	out := fmt.Sprintf(format, median)
	if len(sorted) > 1 {
		out += fmt.Sprintf(" ["+format+" – "+format+"]", sorted[0], sorted[len(sorted)-1])
	}
	return out
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

// tailRatio is p99 ÷ p50.
func (r result) tailRatio() float64 { return float64(r.p(99)) / float64(max(r.p(50), 1)) }

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
