package session_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/model"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/session"
)

// A recorded request can be sent again as it was: the same conversation
// and tools reach the model, byte for byte on the wire.
func TestReplaySendsTheSameRequest(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, nil,
			fakeopenai.Calls(fakeopenai.Call("c1", "run_command", `{"cmd":"make test"}`), fakeopenai.Call("c2", "run_command", `{"cmd":"ls"}`)),
			fakeopenai.Text("all green"),
		)
		tools := registry(t, tool("run_command", false, func(_ context.Context, c session.Call) (string, error) {
			return "ran " + string(c.Arguments), nil
		}))
		s := e.create(t, session.RoleExecutor, 3, "run the tests")
		_, err := e.rt.Run(t.Context(), s.ID, tools, session.RunOptions{})
		require.NoError(t, err)
		reqs := e.requests(t, s.ID)
		require.Len(t, reqs, 2)
		require.NotEmpty(t, reqs[1].ToolsSHA256)
		require.Equal(t, reqs[1].PromptSHA256, reqs[1].AssembledSHA256, "no secret in the prompt: the hashes agree")

		store := e.rt.Store()
		before := dump(t, d)
		r, err := store.Replay(t.Context(), d, reqs[1].ID)
		require.NoError(t, err)
		require.Equal(t, before, dump(t, d), "replaying writes nothing")
		require.True(t, r.ToolsRecorded)
		require.Equal(t, "all green", r.Answer.Content)
		require.Equal(t, s.ID, r.Session.ID)

		client, err := model.New(e.mcfg)
		require.NoError(t, err)
		e.srv.Push(fakeopenai.Text("again"))
		_, err = client.Complete(t.Context(), model.Request{System: e.srv.Requests()[1].System(), Messages: r.Messages, Tools: r.Tools})
		require.NoError(t, err)
		sent := e.srv.Requests()
		require.Equal(t, sent[1].Body["messages"], sent[2].Body["messages"])
		require.Equal(t, sent[1].Body["tools"], sent[2].Body["tools"])

		got, err := store.Request(t.Context(), d, reqs[0].ID)
		require.NoError(t, err)
		require.Equal(t, reqs[0], got)
		recent, err := store.RecentRequests(t.Context(), d, session.RoleExecutor, 5)
		require.NoError(t, err)
		require.Equal(t, []int64{reqs[1].ID, reqs[0].ID}, []int64{recent[0].ID, recent[1].ID})
		_, err = store.Request(t.Context(), d, 999)
		require.ErrorIs(t, err, session.ErrRequestNotFound)
	})
}
