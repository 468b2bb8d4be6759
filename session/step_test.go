package session_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/session"
)

func TestStepSummary(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, args, want string }{
		{"run_command", `{"command":"go test ./...","timeout_seconds":30}`, "run_command: go test ./..."},
		{"edit_file", `{"path":"README.md","old_text":"a","new_text":"b"}`, "edit_file: README.md"},
		{"reply", `{"purpose":"confirm","text":"I will\nfix it"}`, "reply: confirm"},
		{"git_push", `{}`, "git_push"},
		{"git_push", `not json`, "git_push"},
		{"resolve", `{"thread":12,"id":3}`, "resolve (id, thread)"},
		{"run_command", `{"command":"` + strings.Repeat("x", 200) + `"}`, "run_command: " + strings.Repeat("x", 79) + "…"},
		{"search_code", `{"pattern":"  many   spaces\tand tabs "}`, "search_code: many spaces and tabs"},
	} {
		require.Equal(t, tc.want, session.StepSummary(tc.name, tc.args), tc.args)
	}
}

func TestTicketStepsAndMessages(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, nil,
			fakeopenai.Calls(fakeopenai.Call("c1", "run_command", `{"command":"curl -H 'Authorization: `+ghToken+`' x"}`)),
			fakeopenai.Text("Done."))
		tools := registry(t, tool("run_command", false, func(context.Context, session.Call) (string, error) { return "ok", nil }))
		s := e.create(t, session.RoleExecutor, 7, "Check the API")
		other := e.create(t, session.RoleExecutor, 8, "Another Ticket")
		_, err := e.rt.Run(t.Context(), s.ID, tools, session.RunOptions{})
		require.NoError(t, err)

		st := e.rt.Store()
		steps, err := st.TicketSteps(t.Context(), d, 7, 0, 10)
		require.NoError(t, err)
		require.Len(t, steps, 1)
		require.Equal(t, "run_command: curl -H 'Authorization: [REDACTED]' x", steps[0].Summary, "the summary reads the scrubbed arguments")
		require.False(t, steps[0].Running())
		none, err := st.TicketSteps(t.Context(), d, 7, steps[0].ID, 10)
		require.NoError(t, err)
		require.Empty(t, none, "the cursor leaves out what was seen")

		msgs, err := st.TicketMessages(t.Context(), d, 7, 0, 10)
		require.NoError(t, err)
		require.Equal(t, []string{"assistant", "tool", "assistant", "user"}, []string{msgs[0].Role, msgs[1].Role, msgs[2].Role, msgs[3].Role}, "newest first")
		require.Equal(t, "Done.", msgs[0].Content)
		require.NotContains(t, msgs[2].ToolCalls[0].Arguments, ghToken)
		newer, err := st.TicketMessages(t.Context(), d, 7, msgs[1].ID, 10)
		require.NoError(t, err)
		require.Len(t, newer, 1)
		theirs, err := st.TicketMessages(t.Context(), d, 8, 0, 10)
		require.NoError(t, err)
		require.Len(t, theirs, 1)
		require.Equal(t, other.ID, theirs[0].SessionID)
	})
}
