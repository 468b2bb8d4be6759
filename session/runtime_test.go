package session_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/model"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/session"
)

type replyArgs struct {
	Text string `json:"text,omitempty"`
}

// pathArgs are the arguments of the file tools of these tests.
type pathArgs struct {
	Path string `json:"path" jsonschema:"minLength=1"`
	Text string `json:"text,omitempty"`
}

func TestToolLoop(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, nil,
			fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{fakeopenai.Call("c1", "write_file", `{"path":"a.txt","text":"hello"}`)},
				Usage: fakeopenai.UsageOpenAI(1000, 0, 20)},
			fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{
				fakeopenai.Call("c2", "read_file", `{"path":"a.txt"}`),
				fakeopenai.Call("c3", "write_file", `{"text":"no path","mode":"x"}`),
				fakeopenai.Call("c4", "rm_rf", `{}`),
				fakeopenai.Call("c5", "reply", `{"text":"one two three four"}`),
			}, Usage: fakeopenai.UsageOpenAI(1200, 1000, 30)},
			fakeopenai.Reply{Content: "Wrote a.txt.", Usage: fakeopenai.UsageOpenAI(1400, 1200, 5)},
		)
		files := map[string]string{}
		tools := registry(t,
			session.Spec[pathArgs]{Name: "write_file", Handler: func(_ context.Context, _ session.Call, a pathArgs) (string, error) {
				files[a.Path] = a.Text
				return "wrote " + a.Path, nil
			}}.Tool(),
			session.Spec[pathArgs]{Name: "read_file", Idempotent: true, Handler: func(_ context.Context, _ session.Call, a pathArgs) (string, error) {
				return files[a.Path], nil
			}}.Tool(),
			session.Spec[replyArgs]{Name: "reply",
				Check: func(_ context.Context, _ session.Call, a replyArgs) error {
					return session.Refuse("a chat message is limited to %d words; this is %d", 3, len(strings.Fields(a.Text)))
				},
				Handler: func(context.Context, session.Call, replyArgs) (string, error) {
					t.Error("a refused call must not run")
					return "", nil
				}}.Tool(),
		)
		s := e.create(t, session.RoleExecutor, 7, "Write hello to a.txt")
		out, err := e.rt.Run(t.Context(), s.ID, tools, session.RunOptions{})
		require.NoError(t, err)
		require.Equal(t, session.Outcome{SessionID: s.ID, State: session.StateDone, Reason: session.ReasonEndTurn,
			Steps: 3, Final: "Wrote a.txt."}, out)
		require.Equal(t, map[string]string{"a.txt": "hello"}, files)

		reqs := e.srv.Requests()
		require.Len(t, reqs, 3)
		require.Equal(t, []string{"write_file", "read_file", "reply"}, reqs[0].ToolNames())
		require.Equal(t, "You are the test agent. Revision one.", reqs[0].System())
		require.Equal(t, []string{"system", "user", "assistant", "tool"}, roles(reqs[1]))
		results := toolResults(reqs[2])
		require.Equal(t, "wrote a.txt", results["c1"])
		require.Equal(t, "hello", results["c2"])
		require.Equal(t, `refused: invalid arguments: arguments: additional properties 'mode' not allowed; arguments: missing property 'path'`, results["c3"])
		require.Equal(t, `refused: there is no tool named "rm_rf"`, results["c4"])
		require.Equal(t, "refused: a chat message is limited to 3 words; this is 4", results["c5"])

		msgs := e.messages(t, s.ID)
		require.Len(t, msgs, 9)
		require.Equal(t, "user", msgs[0].Role)
		require.Equal(t, "assistant", msgs[1].Role)
		require.Equal(t, "write_file", msgs[1].ToolCalls[0].Name)
		require.NotZero(t, msgs[1].RequestID)
		require.Equal(t, "Wrote a.txt.", msgs[8].Content)

		calls, err := e.rt.Store().ToolCalls(t.Context(), d, s.ID)
		require.NoError(t, err)
		states := map[string]string{}
		for _, c := range calls {
			states[c.CallID] = c.State
		}
		require.Equal(t, map[string]string{"c1": "done", "c2": "done", "c3": "refused", "c4": "refused", "c5": "refused"}, states)

		stored := e.requests(t, s.ID)
		require.Len(t, stored, 3)
		for _, r := range stored {
			require.EqualValues(t, 1, r.PromptRevision)
			require.Len(t, r.PromptSHA256, 64)
			require.Equal(t, "fake-model", r.Model)
			require.Equal(t, "step", r.Purpose)
		}
		require.Equal(t, "tool_calls", stored[0].FinishReason)
		require.Equal(t, model.Usage{Input: 200, CacheRead: 1000, Output: 30}, stored[1].Usage)

		got := e.get(t, s.ID)
		require.EqualValues(t, 3, got.Requests)
		require.Equal(t, model.Usage{Input: 1000 + 200 + 200, CacheRead: 2200, Output: 55}, got.Usage)
		require.EqualValues(t, 7, got.TicketID)

		// A second session of the same Ticket adds to the Ticket's totals.
		e.srv.Push(fakeopenai.Reply{Content: "ok", Usage: fakeopenai.UsageOpenAI(100, 0, 1)})
		s2 := e.create(t, session.RoleExecutor, 7, "again")
		_, err = e.rt.Run(t.Context(), s2.ID, tools, session.RunOptions{})
		require.NoError(t, err)
		totals, err := e.rt.Store().TicketTotals(t.Context(), d, 7)
		require.NoError(t, err)
		require.Equal(t, session.Totals{Sessions: 2, Requests: 4,
			Usage: model.Usage{Input: 1500, CacheRead: 2200, Output: 56}}, totals)

		// The session is done; an inbound message reopens it.
		_, err = e.rt.Append(t.Context(), d, s.ID, "one more thing")
		require.NoError(t, err)
		require.Equal(t, session.StateActive, e.get(t, s.ID).State)
	})
}

func TestResumeAfterCrash(t *testing.T) {
	t.Parallel()
	for _, relaxed := range []bool{false, true} {
		t.Run(fmt.Sprintf("relaxed intent %v", relaxed), func(t *testing.T) { testResumeAfterCrash(t, relaxed) })
	}
}

func testResumeAfterCrash(t *testing.T, relaxed bool) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, func(e *env) { e.cfg.RelaxedIntent = relaxed },
			fakeopenai.Calls(
				fakeopenai.Call("c1", "lookup", `{}`),
				fakeopenai.Call("c2", "deploy", `{}`),
				fakeopenai.Call("c3", "fetch", `{}`),
			),
			fakeopenai.Text("deployment checked"),
		)
		var lookups, deploys, fetches atomic.Int32
		crash := true
		tools := registry(t,
			tool("lookup", false, func(context.Context, session.Call) (string, error) {
				lookups.Add(1)
				return "found", nil
			}),
			tool("deploy", false, func(context.Context, session.Call) (string, error) {
				deploys.Add(1)
				if crash {
					panic("process killed after deploying")
				}
				return "deployed", nil
			}),
			tool("fetch", true, func(context.Context, session.Call) (string, error) {
				fetches.Add(1)
				return "fetched", nil
			}),
		)
		s := e.create(t, session.RoleExecutor, 1, "deploy it")
		require.PanicsWithValue(t, "process killed after deploying", func() {
			_, _ = e.rt.Run(t.Context(), s.ID, tools, session.RunOptions{})
		})
		require.EqualValues(t, 1, deploys.Load())

		// A new process resumes the same session.
		crash = false
		rt := e.runtime(t)
		out, err := rt.Run(t.Context(), s.ID, tools, session.RunOptions{})
		require.NoError(t, err)
		require.Equal(t, session.StateDone, out.State)
		require.Equal(t, 1, out.Steps, "the stored step is not requested again")
		require.EqualValues(t, 1, lookups.Load(), "a completed call is not run again")
		require.EqualValues(t, 1, deploys.Load(), "an interrupted call with side effects is not run again")
		require.EqualValues(t, 1, fetches.Load())

		results := toolResults(e.srv.Last())
		require.Equal(t, "found", results["c1"])
		require.Equal(t, session.Interrupted, results["c2"])
		require.Equal(t, "fetched", results["c3"])
		require.Len(t, e.srv.Requests(), 2)

		calls, err := rt.Store().ToolCalls(t.Context(), d, s.ID)
		require.NoError(t, err)
		require.Equal(t, "interrupted", calls[1].State)
	})
}

func TestResumeRerunsIdempotentTool(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, nil, fakeopenai.Calls(fakeopenai.Call("c1", "status", `{}`)), fakeopenai.Text("clean"))
		var runs atomic.Int32
		ctx, cancel := context.WithCancel(t.Context())
		tools := registry(t, tool("status", true, func(ctx context.Context, _ session.Call) (string, error) {
			if runs.Add(1) == 1 {
				cancel() // the job is cancelled while the tool runs
				<-ctx.Done()
				return "", ctx.Err()
			}
			return "nothing to commit", nil
		}))
		s := e.create(t, session.RoleExecutor, 1, "status?")
		out, err := e.rt.Run(ctx, s.ID, tools, session.RunOptions{})
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, session.StateActive, out.State)
		require.Equal(t, session.ReasonCancelled, out.Reason)
		require.Equal(t, session.StateActive, e.get(t, s.ID).State, "a cancelled run stays resumable")

		out, err = e.runtime(t).Run(t.Context(), s.ID, tools, session.RunOptions{})
		require.NoError(t, err)
		require.Equal(t, session.StateDone, out.State)
		require.EqualValues(t, 2, runs.Load())
		require.Equal(t, "nothing to commit", toolResults(e.srv.Last())["c1"])
		calls, err := e.rt.Store().ToolCalls(t.Context(), d, s.ID)
		require.NoError(t, err)
		require.Equal(t, 2, calls[0].Attempts)
		require.Equal(t, "done", calls[0].State)
	})
}

func TestModelRetries(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, nil,
			fakeopenai.Status(http.StatusTooManyRequests, "12"),
			fakeopenai.Status(http.StatusInternalServerError, ""),
			fakeopenai.Text("answered"))
		s := e.create(t, session.RoleMain, 0, "hello")
		out, err := e.rt.Run(t.Context(), s.ID, nil, session.RunOptions{})
		require.NoError(t, err)
		require.Equal(t, "answered", out.Final)
		require.Len(t, e.srv.Requests(), 3)
		require.Len(t, e.requests(t, s.ID), 1, "only the answered request is recorded")
		// Retry-After (12 s) wins over the first backoff; then 2 s * (1/2).
		require.Equal(t, []time.Duration{12 * time.Second, time.Second}, e.waits)
	})
}

func TestCancellation(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		t.Run("stop check at a step boundary", func(t *testing.T) {
			e := setup(t, d, nil, fakeopenai.Calls(fakeopenai.Call("c1", "noop", `{}`)))
			tools := registry(t, tool("noop", true, func(context.Context, session.Call) (string, error) { return "ok", nil }))
			s := e.create(t, session.RoleExecutor, 3, "work")
			checks := 0
			out, err := e.rt.Run(t.Context(), s.ID, tools, session.RunOptions{StopCheck: func(context.Context) (bool, string) {
				checks++
				return checks > 1, "paused by alice"
			}})
			require.NoError(t, err)
			require.Equal(t, session.StateStopped, out.State)
			require.Equal(t, "paused by alice", out.Reason)
			require.Equal(t, 1, out.Steps)
			got := e.get(t, s.ID)
			require.Equal(t, session.StateStopped, got.State)
			require.Equal(t, "paused by alice", got.StateReason)

			// Resuming the paused work continues from the stored step.
			require.NoError(t, e.rt.Store().Reopen(t.Context(), d, s.ID))
			e.srv.Push(fakeopenai.Text("resumed"))
			out, err = e.rt.Run(t.Context(), s.ID, tools, session.RunOptions{})
			require.NoError(t, err)
			require.Equal(t, "resumed", out.Final)
			require.Equal(t, "ok", toolResults(e.srv.Last())["c1"])
		})
		t.Run("context cancelled during a model request", func(t *testing.T) {
			arrived := make(chan struct{})
			e := setup(t, d, nil, fakeopenai.Respond(func(fakeopenai.Request) fakeopenai.Reply {
				close(arrived)
				return fakeopenai.Reply{Hang: true}
			}))
			s := e.create(t, session.RoleMain, 0, "hi")
			ctx, cancel := context.WithCancel(t.Context())
			go func() {
				<-arrived
				cancel()
			}()
			out, err := e.rt.Run(ctx, s.ID, nil, session.RunOptions{})
			require.ErrorIs(t, err, context.Canceled)
			require.Equal(t, session.ReasonCancelled, out.Reason)
			require.Empty(t, e.requests(t, s.ID))

			e.srv.Push(fakeopenai.Text("back"))
			out, err = e.runtime(t).Run(t.Context(), s.ID, nil, session.RunOptions{})
			require.NoError(t, err)
			require.Equal(t, "back", out.Final)
		})
	})
}

func TestPromptRevisionPerRequest(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, nil, fakeopenai.Calls(fakeopenai.Call("c1", "prompts_save", `{}`)), fakeopenai.Text("saved"))
		tools := registry(t, tool("prompts_save", false, func(context.Context, session.Call) (string, error) {
			// A person saves a new revision while the session runs.
			e.prompts.Save("You are the test agent. Revision two.")
			return "saved revision 2", nil
		}))
		s := e.create(t, session.RoleMain, 0, "save the prompt")
		_, err := e.rt.Run(t.Context(), s.ID, tools, session.RunOptions{})
		require.NoError(t, err)
		reqs := e.srv.Requests()
		require.Equal(t, "You are the test agent. Revision one.", reqs[0].System())
		require.Equal(t, "You are the test agent. Revision two.", reqs[1].System())
		stored := e.requests(t, s.ID)
		require.EqualValues(t, 1, stored[0].PromptRevision)
		require.EqualValues(t, 2, stored[1].PromptRevision)
		require.NotEqual(t, stored[0].PromptSHA256, stored[1].PromptSHA256)
	})
}

func TestInboundMessageDuringToolCalls(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, nil,
			fakeopenai.Calls(fakeopenai.Call("c1", "slow", `{}`), fakeopenai.Call("c2", "slow", `{}`)),
			fakeopenai.Text("seen both"))
		var sessionID int64
		n := 0
		tools := registry(t, tool("slow", true, func(ctx context.Context, _ session.Call) (string, error) {
			n++
			if n == 1 {
				// A follow-up card arrives between the two results.
				_, err := e.rt.Append(ctx, d, sessionID, "follow-up: also update the docs")
				require.NoError(t, err)
			}
			return fmt.Sprintf("done %d", n), nil
		}))
		s := e.create(t, session.RoleExecutor, 4, "start")
		sessionID = s.ID
		_, err := e.rt.Run(t.Context(), s.ID, tools, session.RunOptions{})
		require.NoError(t, err)
		last := e.srv.Last()
		require.Equal(t, []string{"system", "user", "assistant", "tool", "tool", "user"}, roles(last))
		require.Equal(t, "follow-up: also update the docs", last.LastMessage().Content)
		msgs := e.messages(t, s.ID)
		require.Equal(t, "user", msgs[2].Role, "stored in arrival order")
	})
}

func TestRunErrors(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, nil, fakeopenai.Status(http.StatusBadRequest, ""))
		_, err := e.rt.Run(t.Context(), 12345, nil, session.RunOptions{})
		require.ErrorIs(t, err, session.ErrNotFound)

		s := e.create(t, session.RoleMain, 0, "")
		out, err := e.rt.Run(t.Context(), s.ID, nil, session.RunOptions{})
		require.NoError(t, err)
		require.Equal(t, session.ReasonNoInput, out.Reason)

		s = e.create(t, session.RoleMain, 0, "hi")
		out, err = e.rt.Run(t.Context(), s.ID, nil, session.RunOptions{})
		require.ErrorContains(t, err, "400")
		require.False(t, errors.Is(err, context.Canceled))
		require.Equal(t, session.StateActive, out.State)
		require.NoError(t, e.rt.Store().Fail(t.Context(), d, s.ID, "model refused the request"))
		require.Equal(t, session.StateFailed, e.get(t, s.ID).State)
	})
}

func TestBeforeStepDeliversAtTheNextStep(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, nil, fakeopenai.Calls(fakeopenai.Call("c1", "noop", `{}`)), fakeopenai.Text("seen"))
		tools := registry(t, tool("noop", true, func(context.Context, session.Call) (string, error) { return "ok", nil }))
		s := e.create(t, session.RoleExecutor, 5, "work")
		calls := 0
		out, err := e.rt.Run(t.Context(), s.ID, tools, session.RunOptions{BeforeStep: func(ctx context.Context, sid int64) error {
			calls++
			if calls == 2 {
				_, err := e.rt.Append(ctx, d, sid, "a follow-up arrived")
				return err
			}
			return nil
		}})
		require.NoError(t, err)
		require.Equal(t, "seen", out.Final)
		last := e.srv.Last()
		require.Equal(t, "a follow-up arrived", last.LastMessage().Content, "the follow-up reached the model at its next step")
		require.Equal(t, "ok", toolResults(last)["c1"])
	})
}
