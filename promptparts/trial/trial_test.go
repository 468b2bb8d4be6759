package trial_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/model"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/promptparts/trial"
	"github.com/superagent-dev/superagent/session"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck"),
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("internal/poll.runtime_pollWait"),
	)
}

var price = map[string]model.Price{"fake-model": {Input: 2, Output: 8}}

// recorded runs a main Session (two requests, the first calling a tool)
// under revision 1 and an Executor Session (one request) under revision
// 2, against a fake model, and returns the three requests' ids.
func recorded(t *testing.T, d *db.DB, srv *fakeopenai.Server, prompts *promptparts.Service) []int64 {
	t.Helper()
	ctx := context.Background()
	client, err := model.New(model.Config{BaseURL: srv.URL(), Model: "fake-model", Prices: price})
	require.NoError(t, err)
	source := session.PromptFunc(func(ctx context.Context, s *session.Session) (string, int64, error) {
		in := promptparts.Input{Role: promptparts.Role(s.Role), Environment: []promptparts.Var{{Name: "Deployment", Value: "test"}}}
		if s.Role == session.RoleExecutor {
			in.AgentsMD = []promptparts.AgentsFile{{Path: "AGENTS.md", Text: "Run make test.\n"}}
		}
		return prompts.Assemble(ctx, in)
	})
	rt := session.New(session.Config{}, d, client, source, nil, nil)
	lookup := session.Spec[struct {
		What string `json:"what"`
	}]{Name: "lookup", Description: "looks something up", Handler: func(context.Context, session.Call, struct {
		What string `json:"what"`
	}) (string, error) {
		return "found it", nil
	}}.Tool()
	tools, err := session.NewRegistry(lookup)
	require.NoError(t, err)
	_, err = prompts.SaveJSON(ctx, []byte(`{"base_revision": 0, "sections": {"ticket_scope": {"text": "Small changes."}}}`), promptparts.SaveMeta{Origin: promptparts.OriginPanel, Actor: "ada"})
	require.NoError(t, err)

	converse := func(role session.Role, ticket int64, text string) int64 {
		s, err := rt.Create(ctx, d, role, ticket)
		require.NoError(t, err)
		_, err = rt.Append(ctx, d, s.ID, text)
		require.NoError(t, err)
		_, err = rt.Run(ctx, s.ID, tools, session.RunOptions{})
		require.NoError(t, err)
		return s.ID
	}
	srv.Push(fakeopenai.Calls(fakeopenai.Call("c1", "lookup", `{"what":"tickets"}`)), fakeopenai.Text("routed"))
	main := converse(session.RoleMain, 0, "a card arrived")

	_, err = prompts.SaveJSON(ctx, []byte(`{"base_revision": 1, "sections": {"ticket_scope": {"text": "Small changes only."}}}`), promptparts.SaveMeta{Origin: promptparts.OriginPanel, Actor: "ada"})
	require.NoError(t, err)
	srv.Push(fakeopenai.Text("fixed"))
	exec := converse(session.RoleExecutor, 7, "fix the typo")

	var ids []int64
	for _, s := range []int64{main, exec} {
		reqs, err := rt.Store().Requests(ctx, d, s)
		require.NoError(t, err)
		for _, r := range reqs {
			ids = append(ids, r.ID)
		}
	}
	require.Len(t, ids, 3)
	return ids
}

// Trying a draft on three recorded requests shows, for each, the prompt
// diff and the draft's answer beside the recorded one; it writes no row
// anywhere.
func TestTryADraft(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		prompts, err := promptparts.New(promptparts.Config{}, d)
		require.NoError(t, err)
		require.NoError(t, prompts.Start(ctx))
		t.Cleanup(prompts.Stop)
		srv := fakeopenai.New(t)
		ids := recorded(t, d, srv, prompts)
		sent := srv.Requests()

		draft, err := prompts.DraftFromPatch(ctx, promptparts.Patch{BaseRevision: 2, Overrides: map[string]*promptparts.OverridePatch{
			promptparts.KeyReplies: {Text: "# Replies\n\nAnswer in one sentence.\n"},
		}})
		require.NoError(t, err)
		client, err := model.New(model.Config{BaseURL: srv.URL(), Model: "fake-model", Prices: price})
		require.NoError(t, err)
		tr := trial.New(trial.Config{Models: map[session.Role]trial.Model{session.RoleMain: client, session.RoleExecutor: client}}, d, prompts, session.NewStore(d, nil, nil))
		srv.Push(
			fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{fakeopenai.Call("d1", "lookup", `{"what":"threads"}`)}, Usage: fakeopenai.UsageOpenAI(1000, 0, 50)},
			fakeopenai.Text("routed, briefly"),
			fakeopenai.Text("fixed, briefly"),
		)

		before := dbtest.RowCounts(t, d)
		results, err := tr.Run(ctx, draft, ids)
		require.NoError(t, err)
		require.Equal(t, before, dbtest.RowCounts(t, d), "trying wrote nothing")

		require.Len(t, results, 3)
		wantRecorded := []string{"", "routed", "fixed"}
		wantDraft := []string{"", "routed, briefly", "fixed, briefly"}
		for i, r := range results {
			require.Empty(t, r.Problem)
			require.True(t, r.PromptVerified, "request %d: the rebuilt prompt is what was sent", i)
			require.Equal(t, sent[i].System(), r.Prompt.From, "request %d: byte for byte what the model received", i)
			require.Contains(t, r.Prompt.Diff, "+Answer in one sentence.\n")
			require.Equal(t, wantRecorded[i], r.Recorded.Content)
			require.NotNil(t, r.Draft, r.DraftError)
			require.Equal(t, wantDraft[i], r.Draft.Content)
			// The draft's request is the recorded one with the draft's prompt.
			again := srv.Requests()[3+i]
			require.Equal(t, r.Prompt.To, again.System())
			require.Equal(t, sent[i].Body["tools"], again.Body["tools"])
			require.Equal(t, sent[i].Body["messages"].([]any)[1:], again.Body["messages"].([]any)[1:])
		}
		require.Equal(t, []session.Role{session.RoleMain, session.RoleMain, session.RoleExecutor}, []session.Role{results[0].Role, results[1].Role, results[2].Role})
		require.Equal(t, []model.ToolCall{{ID: "c1", Name: "lookup", Arguments: `{"what":"tickets"}`}}, results[0].Recorded.ToolCalls)
		require.Equal(t, []model.ToolCall{{ID: "d1", Name: "lookup", Arguments: `{"what":"threads"}`}}, results[0].Draft.ToolCalls)
		require.Equal(t, int64(1000), results[0].Draft.Usage.Input)
		require.InDelta(t, (1000*2+50*8)/1e6, results[0].Draft.Usage.Cost, 1e-12)
		require.Equal(t, int64(2), results[2].Request.PromptRevision)

		last, err := tr.Select(ctx, nil, 2, session.RoleMain)
		require.NoError(t, err)
		require.Equal(t, ids[:2], last)
		_, err = tr.Run(ctx, draft, []int64{999})
		require.ErrorIs(t, err, session.ErrRequestNotFound)
	})
}

// Without a model the trial shows the prompt diffs only; a request whose
// prompt was not recorded says so.
func TestTryWithoutAModel(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		prompts, err := promptparts.New(promptparts.Config{Now: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }}, d)
		require.NoError(t, err)
		srv := fakeopenai.New(t)
		ids := recorded(t, d, srv, prompts)
		_, err = d.Exec(ctx, `UPDATE session_requests SET assembled_sha256 = '' WHERE id = $1`, ids[0])
		require.NoError(t, err)
		head, err := prompts.Head(ctx)
		require.NoError(t, err)
		draft, err := prompts.DraftFromPatch(ctx, promptparts.Patch{BaseRevision: head})
		require.NoError(t, err)
		tr := trial.New(trial.Config{}, d, prompts, session.NewStore(d, nil, nil))
		results, err := tr.Run(ctx, draft, ids)
		require.NoError(t, err)
		require.Contains(t, results[0].Problem, "before prompts were recorded")
		for _, r := range results[1:] {
			require.Nil(t, r.Draft)
			require.True(t, r.PromptVerified)
		}
		require.Empty(t, results[2].Prompt.Diff, "the draft on revision 2 without changes gives request 3 its prompt")
		require.Contains(t, results[1].Prompt.Diff, "+Small changes only.", "request 2 was made under revision 1")
	})
}
