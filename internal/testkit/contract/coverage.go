package contract

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// CoverageEnv names the directory where Cover records what contract-checked
// tests exercised; unset, nothing is recorded. make contracts sets it, runs
// the suites one package at a time, and reads the records back
// (ReadCoverage) to write docs/contracts.md.
const CoverageEnv = "SUPERAGENT_CONTRACT_COVERAGE"

// covered remembers what this process has recorded. It is process-wide on
// purpose: coverage is the union over every test of a test binary.
var covered sync.Map

// Cover records that a contract-checked test exercised id of kind
// ("github-operation", "github-webhook", "feishu-operation", …).
func Cover(kind, id string) {
	dir := os.Getenv(CoverageEnv)
	if dir == "" {
		return
	}
	if _, seen := covered.LoadOrStore(kind+" "+id, true); seen {
		return
	}
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("%d.txt", os.Getpid())), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return // coverage is a report, not a test: never fail one for it
	}
	defer f.Close()
	_, _ = fmt.Fprintf(f, "%s %s\n", kind, id)
}

// ReadCoverage reads every record in dir: kind → ids, sorted.
func ReadCoverage(dir string) (map[string][]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	set := map[string]map[string]bool{}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("reading coverage: %w", err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			kind, id, ok := strings.Cut(sc.Text(), " ")
			if !ok {
				continue
			}
			if set[kind] == nil {
				set[kind] = map[string]bool{}
			}
			set[kind][id] = true
		}
		_ = f.Close()
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("reading coverage %s: %w", name, err)
		}
	}
	out := map[string][]string{}
	for kind, ids := range set {
		for id := range ids {
			out[kind] = append(out[kind], id)
		}
		sort.Strings(out[kind])
	}
	return out, nil
}
