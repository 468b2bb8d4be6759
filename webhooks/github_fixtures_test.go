package webhooks_test

import (
	"context"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/tickets"
	"github.com/superagent-dev/superagent/webhooks"
)

// want is the expected outcome of one fixture: a card (kind, thread,
// permission) or a state (ignored, processed) without one.
type want struct {
	kind, thread, permission string
	state                    string
}

const hello = "github:codertocat/hello-world"

var fixtureWants = map[string]want{
	"check_run/completed.payload.json":                                      {state: "ignored"},
	"check_run/created.payload.json":                                        {state: "ignored"},
	"check_run/requested_action.payload.json":                               {state: "ignored"},
	"check_run/rerequested.payload.json":                                    {state: "ignored"},
	"check_suite/completed.payload.json":                                    {state: "ignored"},
	"check_suite/requested.payload.json":                                    {state: "ignored"},
	"check_suite/requested.payload.with-email-with-special-characters.json": {state: "ignored"},
	"check_suite/rerequested.payload.json":                                  {state: "ignored"},
	"installation/created.payload.json":                                     {state: "processed"},
	"installation/deleted.payload.json":                                     {state: "processed"},
	"installation/new_permissions_accepted.payload.json":                    {state: "processed"},
	"installation/suspend.payload.json":                                     {state: "processed"},
	"installation/unsuspend.payload.json":                                   {state: "processed"},
	"installation_repositories/added.payload.json":                          {state: "processed"},
	"installation_repositories/removed.payload.json":                        {state: "processed"},
	"issue_comment/created.payload.json":                                    {kind: "comment", thread: hello + "#1", permission: "admin"},
	"issue_comment/deleted.payload.json":                                    {state: "ignored"},
	"issue_comment/edited.payload.json":                                     {kind: "comment_edited", thread: hello + "#1", permission: "admin"},
	"issues/assigned.payload.json":                                          {state: "ignored"},
	"issues/deleted.payload.json":                                           {state: "ignored"},
	"issues/demilestoned.payload.json":                                      {state: "ignored"},
	"issues/edited.payload.json":                                            {kind: "issue_edited", thread: hello + "#1", permission: "admin"},
	"issues/labeled.payload.json":                                           {state: "ignored"},
	"issues/locked.payload.json":                                            {state: "ignored"},
	"issues/milestoned.payload.json":                                        {state: "ignored"},
	"issues/opened.payload.json":                                            {kind: "issue_opened", thread: hello + "#1", permission: "admin"},
	"issues/opened.with-empty-body.payload.json":                            {kind: "issue_opened", thread: hello + "#1", permission: "admin"},
	"issues/opened.with-transfer.payload.json":                              {kind: "issue_opened", thread: hello + "#1", permission: "admin"},
	"issues/pinned.payload.json":                                            {state: "ignored"},
	"issues/reopened.payload.json":                                          {kind: "issue_reopened", thread: hello + "#1", permission: "admin"},
	"issues/transferred.payload.json":                                       {state: "ignored"},
	"issues/unassigned.payload.json":                                        {state: "ignored"},
	"issues/unlabeled.payload.json":                                         {state: "ignored"},
	"issues/unlocked.payload.json":                                          {state: "ignored"},
	"issues/unpinned.payload.json":                                          {state: "ignored"},
	"ping/payload.json":                                                     {state: "pong"},
	"ping/with-app_id.payload.json":                                         {state: "pong"},
	"pull_request/assigned.payload.json":                                    {state: "ignored"},
	"pull_request/closed.payload.json":                                      {kind: "pr_closed", thread: hello + "#2", permission: "admin"},
	"pull_request/converted_to_draft.payload.json":                          {kind: "pr_draft", thread: hello + "#2", permission: "admin"},
	"pull_request/labeled.payload.json":                                     {state: "ignored"},
	"pull_request/locked.payload.json":                                      {state: "ignored"},
	"pull_request/opened.payload.json":                                      {kind: "pr_opened", thread: hello + "#2", permission: "admin"},
	"pull_request/opened.with-null-body.json":                               {kind: "pr_opened", thread: hello + "#2", permission: "admin"},
	"pull_request/ready_for_review.payload.json":                            {kind: "pr_ready", thread: hello + "#2", permission: "admin"},
	"pull_request/reopened.payload.json":                                    {kind: "pr_reopened", thread: hello + "#2", permission: "admin"},
	"pull_request/review_request_removed.payload.json":                      {state: "ignored"},
	"pull_request/review_requested.payload.json":                            {state: "ignored"},
	"pull_request/synchronize.payload.json":                                 {state: "ignored"},
	"pull_request/unassigned.payload.json":                                  {state: "ignored"},
	"pull_request/unlabeled.payload.json":                                   {state: "ignored"},
	"pull_request/unlocked.payload.json":                                    {state: "ignored"},
	"pull_request_review/dismissed.payload.json":                            {state: "ignored"},
	"pull_request_review/submitted.payload.json":                            {state: "ignored"},
	"pull_request_review_comment/created.payload.json":                      {kind: "review_comment", thread: hello + "#2/review-thread/284312630", permission: "admin"},
	"pull_request_review_comment/deleted.payload.json":                      {state: "ignored"},
	"pull_request_review_comment/edited.payload.json":                       {kind: "review_comment_edited", thread: hello + "#2/review-thread/284312630", permission: "admin"},
	"pull_request_review_thread/resolved.payload.json":                      {kind: "review_thread_resolved", thread: hello + "#2/review-thread/284312630", permission: "admin"},
	"pull_request_review_thread/unresolved.payload.json":                    {kind: "review_thread_unresolved", thread: hello + "#2/review-thread/284312630", permission: "admin"},
	"push/1.payload.json":                                                   {state: "ignored"},
	"push/payload.json":                                                     {state: "ignored"},
	"push/with-new-branch.payload.json":                                     {kind: "push", thread: hello + "@master", permission: "admin"},
	"push/with-no-username-committer.payload.json":                          {kind: "push", thread: hello + "@master", permission: "admin"},
	"workflow_job/in_progress.payload.json":                                 {state: "ignored"},
	"workflow_job/in_progress.with-queued-steps.payload.json":               {state: "ignored"},
	"workflow_job/queued.payload.json":                                      {state: "ignored"},
	"workflow_job/queued.with-deployment.payload.json":                      {state: "ignored"},
	"workflow_job/waiting.payload.json":                                     {state: "ignored"},
	"workflow_run/completed.payload.json":                                   {state: "ignored"},
	"workflow_run/requested.payload.json":                                   {state: "ignored"},
	"workflow_run/requested.with-conclusion.payload.json":                   {state: "ignored"},
}

// TestEveryFixture posts every fixture signed as GitHub does through the
// real handler, works it with the real worker and checks the outcome. The
// installation fixtures come first (sorted), so payloads without an
// installation still get the author's permission through the stored one.
func TestEveryFixture(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/github/*/*.json")
	require.NoError(t, err)
	sort.Strings(files)
	require.Len(t, files, len(fixtureWants), "every fixture needs an expectation")
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d)
		ctx := context.Background()
		for _, f := range files {
			name := strings.TrimPrefix(f, "testdata/github/")
			w, ok := fixtureWants[name]
			require.True(t, ok, "no expectation for %s", name)
			event := filepath.Dir(name)
			a := e.send(t, e.request(t, event, e.guid(), fixture(t, name)))
			if w.state == "pong" {
				require.Equal(t, http.StatusOK, a.Status, name)
				continue
			}
			require.Equal(t, http.StatusAccepted, a.Status, name)
			e.work(t, a.Delivery)
			got := e.delivery(t, a.Delivery)
			if w.kind == "" {
				require.Equal(t, w.state, got.State, "%s: %s", name, got.Error)
				_, err := e.store.CardByDelivery(ctx, d, a.Delivery)
				require.ErrorIs(t, err, tickets.ErrNotFound, name)
				continue
			}
			require.Equal(t, webhooks.DeliveryProcessed, got.State, "%s: %s", name, got.Error)
			c := e.card(t, a.Delivery)
			require.Equal(t, w.kind, c.Kind, name)
			require.Equal(t, w.thread, c.Thread.Key, name)
			require.Equal(t, tickets.SourceGitHub, c.Source, name)
			require.Equal(t, "Codertocat", c.Author.Login, name)
			require.Equal(t, "21031067", c.Author.ID, name)
			require.Equal(t, tickets.AuthorUser, c.Author.Type, name)
			require.Equal(t, w.permission, c.Author.Permission, name)
			require.Equal(t, tickets.CardCandidate, c.State, name)
			require.False(t, c.Addressed, name)
			require.Less(t, len(tickets.Render(c)), 1024, name)
		}
		// The permission was read once and then cached.
		require.Equal(t, 1, e.fake.Count(http.MethodGet, "/repos/Codertocat/Hello-World/collaborators/Codertocat/permission"))

		installs, err := e.svc.Installations(ctx)
		require.NoError(t, err)
		byID := map[int64]webhooks.Installation{}
		for _, in := range installs {
			byID[in.ID] = in
		}
		require.Equal(t, "active", byID[957387].State)
		require.Equal(t, []string{"Codertocat/Hello-World", "Codertocat/Space"}, byID[957387].Repositories)
		require.Equal(t, "deleted", byID[2].State)
		require.Empty(t, byID[2].Repositories)
		require.Equal(t, "active", byID[16598467].State) // suspended, then unsuspended
		id, err := e.svc.InstallationFor(ctx, "codertocat/space")
		require.NoError(t, err)
		require.Equal(t, int64(957387), id)
	})
}
