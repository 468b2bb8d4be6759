package contract

import (
	"sync"
	"testing"
)

// Violation is one way a request to a fake, or its answer, breaks the
// platform's description.
type Violation struct {
	Method, Path string
	// Operation names the documented operation matched ("checks/create",
	// "im.v1.message.reply"), "" for an undocumented route.
	Operation string
	Problem
}

func (v Violation) String() string {
	op := v.Operation
	if op == "" {
		op = "undocumented"
	}
	return v.Method + " " + v.Path + " (" + op + "): " + v.Problem.String()
}

// Reporter fails a test with each violation a fake reports, unless the
// test is inside Expect. It is safe for concurrent use (fakes report from
// their handlers).
type Reporter struct {
	t      testing.TB
	prefix string

	mu         sync.Mutex
	violations []Violation
	expecting  int // Expect calls running
}

// NewReporter reports to t, each message starting with prefix ("fake
// GitHub").
func NewReporter(t testing.TB, prefix string) *Reporter {
	return &Reporter{t: t, prefix: prefix}
}

// Report records v and, outside Expect, fails the test with it.
func (r *Reporter) Report(v Violation) {
	r.mu.Lock()
	r.violations = append(r.violations, v)
	expecting := r.expecting > 0
	r.mu.Unlock()
	if !expecting {
		r.t.Errorf("%s: contract violation: %s", r.prefix, v)
	}
}

// Expect runs f and returns the violations reported meanwhile, which then
// do not fail the test: for tests that send what the description forbids
// on purpose (a fake's own refusals, the checker's tests). Everything the
// fake receives while f runs is covered, background requests included.
func (r *Reporter) Expect(f func()) []Violation {
	r.mu.Lock()
	r.expecting++
	from := len(r.violations)
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.expecting--
		r.mu.Unlock()
	}()
	f()
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Violation(nil), r.violations[from:]...)
}

// Violations returns every violation reported so far.
func (r *Reporter) Violations() []Violation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Violation(nil), r.violations...)
}
