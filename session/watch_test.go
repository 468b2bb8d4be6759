package session_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/model"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/internal/testkit/metrictest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/session"
)

// withSleeps records the runtime's own waits (its fault backoff) in e.
func withSleeps(sleeps *[]time.Duration) func(*env) {
	return func(e *env) {
		e.cfg.Sleep = func(ctx context.Context, d time.Duration) error {
			*sleeps = append(*sleeps, d)
			return ctx.Err()
		}
	}
}

func call(name, args string) fakeopenai.Reply {
	return fakeopenai.Calls(fakeopenai.Call("", name, args))
}

// TestUnusableAnswersAreAskedAgainInPlace: an answer without choices, a
// refusal and an answer cut at the output limit are each asked for again
// in the same Session, after a doubling wait, and recorded as requests
// (their tokens count) without a message; the Run goes on as if they had
// not happened.
func TestUnusableAnswersAreAskedAgainInPlace(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		var sleeps []time.Duration
		e := setup(t, d, withSleeps(&sleeps),
			fakeopenai.Reply{NoChoices: true, Usage: fakeopenai.UsageOpenAI(50, 0, 0)},
			fakeopenai.Refused("I cannot help with that."),
			fakeopenai.Truncated("The answer is"),
			fakeopenai.Text("fixed"),
		)
		s := e.create(t, session.RoleExecutor, 3, "fix it")
		out, err := e.rt.Run(t.Context(), s.ID, registry(t), session.RunOptions{})
		require.NoError(t, err)
		require.Equal(t, session.StateDone, out.State)
		require.Equal(t, "fixed", out.Final)
		require.Equal(t, []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second}, sleeps)
		var faults []string
		for _, r := range e.requests(t, s.ID) {
			require.Equal(t, "step", r.Purpose)
			faults = append(faults, session.FaultKind(r.FinishReason))
		}
		require.Equal(t, []string{"no_choices", "refusal", "truncated", ""}, faults)
		msgs := e.messages(t, s.ID)
		require.Len(t, msgs, 2, "the request and the one usable answer")
		require.Equal(t, "fixed", msgs[1].Content)
		require.EqualValues(t, 4, e.get(t, s.ID).Requests)
	})
}

// TestAPersistentFaultEndsTheRun: a model that keeps answering past its
// output limit is asked four times, then the Run ends with a FaultError
// that names the fault, and the Session stays active for the next Run.
func TestAPersistentFaultEndsTheRun(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		var sleeps []time.Duration
		e := setup(t, d, withSleeps(&sleeps))
		e.srv.Fallback(fakeopenai.Truncated("cut"))
		s := e.create(t, session.RoleExecutor, 3, "fix it")
		_, err := e.rt.Run(t.Context(), s.ID, registry(t), session.RunOptions{})
		var fe *session.FaultError
		require.ErrorAs(t, err, &fe)
		require.Equal(t, model.FaultTruncated, fe.Kind)
		require.Equal(t, 4, fe.Attempts)
		require.Contains(t, err.Error(), "finish_reason length")
		require.Len(t, e.srv.Requests(), 4)
		require.Equal(t, []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second}, sleeps)
		require.Equal(t, session.StateActive, e.get(t, s.ID).State)
	})
}

// TestTurnEndedWithWorkUndone: a text-only answer while the caller says
// the work is undone gets one reminder; the model then does what was
// missing, and the turn ends. A second turn ends twice without it and the
// Session stops, unfinished. An empty answer is asked for again while
// work is undone, and taken as the end of the turn once nothing is.
func TestTurnEndedWithWorkUndone(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		var sleeps []time.Duration
		reg := prometheus.NewRegistry()
		e := setup(t, d, func(e *env) {
			withSleeps(&sleeps)(e)
			m, err := session.NewMetrics(reg)
			require.NoError(t, err)
			e.cfg.Metrics = m
		},
			fakeopenai.Text("I'll now fix the file."),
			call("report", `{"state":"done"}`),
			fakeopenai.Empty(),
			// The second turn.
			fakeopenai.Empty(),
			fakeopenai.Text("Looking into it."),
			fakeopenai.Text("Still looking."),
		)
		reported := false
		tools := registry(t, tool("report", false, func(context.Context, session.Call) (string, error) {
			reported = true
			return "reported", nil
		}))
		opts := session.RunOptions{Unfinished: func(context.Context, *session.Session) (string, error) {
			if reported {
				return "", nil
			}
			return "the Ticket has no report.", nil
		}}
		s := e.create(t, session.RoleExecutor, 4, "fix the file")
		out, err := e.rt.Run(t.Context(), s.ID, tools, opts)
		require.NoError(t, err)
		require.Equal(t, session.StateDone, out.State)
		reqs := e.srv.Requests()
		require.Len(t, reqs, 3)
		require.Equal(t, session.NudgePrefix+"the Ticket has no report.", reqs[1].LastMessage().Content)
		require.Empty(t, sleeps, "the empty answer after the report ends the turn at once")
		require.Equal(t, "", out.Final)

		reported = false
		_, err = e.rt.Append(t.Context(), d, s.ID, "one more thing")
		require.NoError(t, err)
		out, err = e.rt.Run(t.Context(), s.ID, tools, opts)
		require.NoError(t, err)
		require.Equal(t, session.StateStopped, out.State)
		require.Equal(t, session.ReasonUnfinished, out.Reason)
		require.Len(t, e.srv.Requests(), 6, "the empty answer asked again, one reminder a turn, then the stop")
		require.Equal(t, []time.Duration{2 * time.Second}, sleeps)
		require.InDelta(t, 2, metrictest.Value(t, reg, "superagent_model_nudges_total", "role", "executor", "model", "fake-model", "outcome", "reminded"), 0)
		require.InDelta(t, 1, metrictest.Value(t, reg, "superagent_model_nudges_total", "role", "executor", "model", "fake-model", "outcome", "stopped"), 0)
	})
}

// TestTheSameCallWithTheSameResult: a failing command run again and again
// gets one note after three identical results (its timing differs each
// time) and the Session wraps up after six; the wrap-up answer is the
// last request.
func TestTheSameCallWithTheSameResult(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, func(e *env) { e.cfg.RepeatLimit = 3 })
		e.srv.Fallback(fakeopenai.Respond(func(r fakeopenai.Request) fakeopenai.Reply {
			if strings.Contains(r.LastMessage().Content, "limit of this session") {
				return fakeopenai.Text("Blocked: the test keeps failing.")
			}
			return call("run_command", `{"command": "go test ./..."}`)
		}))
		runs := 0
		tools := registry(t, tool("run_command", false, func(context.Context, session.Call) (string, error) {
			runs++
			return fmt.Sprintf("exit code 1 after %dms\nFAIL\texample.com/x\t0.%03ds", 10+runs, runs), nil
		}))
		s := e.create(t, session.RoleExecutor, 5, "make the tests pass")
		out, err := e.rt.Run(t.Context(), s.ID, tools, session.RunOptions{})
		require.NoError(t, err)
		require.Equal(t, session.StateStopped, out.State)
		require.Equal(t, session.ReasonRepeatedCall, out.Reason)
		require.Equal(t, 6, runs)
		reqs := e.srv.Requests()
		require.Len(t, reqs, 7, "six calls and the wrap-up")
		notes := 0
		for _, m := range reqs[6].Messages {
			if strings.HasPrefix(m.Content, session.RepeatPrefix) {
				notes++
				require.Contains(t, m.Content, "run_command: go test ./...")
			}
		}
		require.Equal(t, 1, notes, "one note")
		require.Equal(t, "Blocked: the test keeps failing.", out.Final)
	})
}

// TestNoProgress: reading file after file without changing one, running a
// command or writing to anyone gets a note after the stall limit, and the
// Session wraps up at twice it; a new command in between resets the count.
func TestNoProgress(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, func(e *env) { e.cfg.StallSteps = 4 })
		step := 0
		e.srv.Fallback(fakeopenai.Respond(func(r fakeopenai.Request) fakeopenai.Reply {
			if strings.Contains(r.LastMessage().Content, "limit of this session") {
				return fakeopenai.Text("Nothing to change, it seems.")
			}
			step++
			if step == 3 {
				return call("run_command", `{"command":"ls"}`)
			}
			return call("read_file", fmt.Sprintf(`{"path":"f%d.go"}`, step))
		}))
		read := tool("read_file", true, func(context.Context, session.Call) (string, error) { return "package x", nil })
		run := tool("run_command", false, func(context.Context, session.Call) (string, error) { return "exit code 0", nil })
		run.Progress = true
		s := e.create(t, session.RoleExecutor, 6, "look around")
		out, err := e.rt.Run(t.Context(), s.ID, registry(t, read, run), session.RunOptions{})
		require.NoError(t, err)
		require.Equal(t, session.StateStopped, out.State)
		require.Equal(t, session.ReasonNoProgress, out.Reason)
		// Three requests up to the command, then eight without progress.
		require.Equal(t, 3+8, step)
		last := e.srv.Last()
		notes := 0
		for _, m := range last.Messages {
			if strings.HasPrefix(m.Content, session.StallPrefix) {
				notes++
			}
		}
		require.Equal(t, 1, notes)
	})
}

// TestSloppyHandoff: an empty handoff is asked for again, a one-word one
// too, and the third is used; the successor's first message carries the
// caller's facts beside it. When every answer is useless, the successor
// starts from the facts alone: the rollover does not fail.
func TestSloppyHandoff(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, func(e *env) {
			e.cfg.ContextWindow = 10_000
			e.cfg.RolloverAt = 0.5
		},
			fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{fakeopenai.Call("c1", "grep", `{}`)}, Usage: fakeopenai.UsageOpenAI(4_900, 0, 50)},
			fakeopenai.Empty(),
			fakeopenai.Text("Continue."),
			fakeopenai.Text("Goal: fix the three hits grep found; none fixed yet."),
			fakeopenai.Text("fixed"),
		)
		tools := registry(t, tool("grep", true, func(context.Context, session.Call) (string, error) {
			return strings.Repeat("match\n", 200), nil
		}))
		facts := func(context.Context, *session.Session) (string, error) {
			return "Host facts: the original request was \"fix the hits\"; open question: which branch?", nil
		}
		s := e.create(t, session.RoleExecutor, 7, "fix the hits")
		out, err := e.rt.Run(t.Context(), s.ID, tools, session.RunOptions{HandoffFacts: facts})
		require.NoError(t, err)
		require.Equal(t, "fixed", out.Final)
		reqs := e.srv.Requests()
		require.Len(t, reqs, 5)
		require.Contains(t, reqs[2].LastMessage().Content, "host: that handoff has 0 words")
		first := reqs[4].Messages[1].Content
		require.Contains(t, first, "Goal: fix the three hits")
		require.Contains(t, first, "open question: which branch?")
		var purposes []string
		for _, r := range e.requests(t, s.ID) {
			purposes = append(purposes, r.Purpose+" "+session.FaultKind(r.FinishReason))
		}
		require.Equal(t, []string{"step ", "handoff empty_handoff", "handoff empty_handoff", "handoff "}, purposes)

		// Every answer useless: the facts alone.
		e2 := setup(t, d, func(e *env) {
			e.cfg.ContextWindow = 10_000
			e.cfg.RolloverAt = 0.5
		},
			fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{fakeopenai.Call("c1", "grep", `{}`)}, Usage: fakeopenai.UsageOpenAI(4_900, 0, 50)},
			fakeopenai.Empty(), fakeopenai.NoChoices(), fakeopenai.Text("ok"),
			fakeopenai.Text("fixed"),
		)
		s = e2.create(t, session.RoleExecutor, 8, "fix the hits")
		out, err = e2.rt.Run(t.Context(), s.ID, tools, session.RunOptions{HandoffFacts: facts})
		require.NoError(t, err)
		require.Equal(t, "fixed", out.Final)
		first = e2.srv.Last().Messages[1].Content
		require.Contains(t, first, "no usable handoff")
		require.Contains(t, first, "open question: which branch?")
	})
}

// TestHandoffRequestFitsTheWindow: a result far larger than what is left
// of the context is cut in the handoff request (not in the transcript),
// so the request stays under the window.
func TestHandoffRequestFitsTheWindow(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, func(e *env) {
			e.cfg.ContextWindow = 10_000
			e.cfg.MaxToolResultBytes = 64 << 10
		},
			fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{fakeopenai.Call("c1", "cat", `{}`), fakeopenai.Call("c2", "cat", `{}`)},
				Usage: fakeopenai.UsageOpenAI(6_000, 0, 50)},
			fakeopenai.Text("Handoff: both files read, they are large logs; next, find the error in them."),
			fakeopenai.Text("done"),
		)
		tools := registry(t, tool("cat", true, func(context.Context, session.Call) (string, error) {
			return strings.Repeat("log line with some words\n", 2_000), nil
		}))
		s := e.create(t, session.RoleExecutor, 9, "read the logs")
		_, err := e.rt.Run(t.Context(), s.ID, tools, session.RunOptions{})
		require.NoError(t, err)
		handoff := e.srv.Requests()[1]
		size := 6_000 + len(handoff.Text())/4
		require.Less(t, size, 10_000, "the handoff request fits the window")
		for _, m := range e.messages(t, s.ID) {
			if m.Role == "tool" {
				require.LessOrEqual(t, len(m.Content), 10_000+100, "a result is at most about a quarter of the window")
				require.Greater(t, len(m.Content), 9_000, "the transcript keeps the result as capped")
			}
		}
	})
}

// TestBehaviourRecord reads back, per model, what the Sessions of a
// Ticket stored of the model's behaviour: refusals by kind, reminders,
// notes, stops and faults.
func TestBehaviourRecord(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		var sleeps []time.Duration
		e := setup(t, d, func(e *env) {
			withSleeps(&sleeps)(e)
			e.cfg.RepeatLimit = 2
		},
			call("open_file", `{}`),
			call("read", `{"path": "a"`),
			call("read", `{"file": "a"}`),
			call("read", `{"path": "/etc/passwd"}`),
			fakeopenai.NoChoices(),
			call("read", `{"path": "a"}`),
			call("read", `{"path": "a"}`),
			call("read", `{"path": "a"}`),
			call("read", `{"path": "a"}`),
			fakeopenai.Text("Stuck on a."),
		)
		type readArgs struct {
			Path string `json:"path"`
		}
		read := session.Spec[readArgs]{Name: "read", Idempotent: true,
			Check: func(_ context.Context, _ session.Call, a readArgs) error {
				if strings.HasPrefix(a.Path, "/") {
					return session.Refuse("paths are relative to the workspace")
				}
				return nil
			},
			Handler: func(context.Context, session.Call, readArgs) (string, error) { return "same", nil }}.Tool()
		s := e.create(t, session.RoleExecutor, 11, "read a")
		out, err := e.rt.Run(t.Context(), s.ID, registry(t, read), session.RunOptions{})
		require.NoError(t, err)
		require.Equal(t, session.ReasonRepeatedCall, out.Reason)
		got, err := e.rt.Store().TicketBehaviour(t.Context(), d, 11)
		require.NoError(t, err)
		require.Len(t, got, 1)
		b := got[0]
		require.Equal(t, "fake-model", b.Model)
		require.Equal(t, 1, b.Sessions)
		require.Equal(t, 10, b.Requests)
		require.Equal(t, map[string]int{session.RefusalUnknownTool: 1, session.RefusalBadJSON: 1, session.RefusalBadArguments: 1,
			session.RefusalHostRule: 1}, b.Refusals)
		require.Equal(t, map[string]int{model.FaultNoChoices: 1}, b.Faults)
		require.Equal(t, 1, b.RepeatNotes)
		require.Equal(t, 1, b.RepeatsStopped)
		require.Zero(t, b.Nudges+b.Unfinished+b.StallNotes+b.StallsStopped)
	})
}
