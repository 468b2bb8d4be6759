package admin

import (
	"context"
	"html"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/tickets"
)

// The Ticket page shows its pull request's changed files as GitHub lists
// them, read through the installation that covers the repository, with
// each file's hunks; GitHub being unreachable leaves a note, not an error.
func TestTicketPageShowsThePullRequestsFiles(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		gh := fakegithub.New(t)
		gh.AddRepo(t, "acme/web", "main", map[string]string{"README.md": "# Web\n\nThis projetc says hello.\n", "go.mod": "module web\n"})
		gh.PushAs(t, "acme/web", "superagent/ticket-1", map[string]string{"README.md": "# Web\n\nThis project says hello.\n"}, "Fix a typo")
		number := gh.AddPullRequest(t, "acme/web", fakegithub.PullRequestSpec{Login: "superagent[bot]", Head: "superagent/ticket-1", Title: "Fix a typo", Draft: true})
		seed.Installation(t, d, 42, "acme/web")
		client, err := githubapp.New(githubapp.Config{AppID: gh.AppID, PrivateKey: gh.PrivateKey(), BaseURL: gh.URL})
		require.NoError(t, err)

		store := tickets.New(tickets.Config{})
		files := PullFiles(func(ctx context.Context, repo string, number, limit int) ([]PullFile, error) {
			got, err := client.PullFiles(ctx, d, repo, number, limit)
			if err != nil {
				return nil, err
			}
			var out []PullFile
			for _, f := range got {
				out = append(out, PullFile{Name: f.GetFilename(), Status: f.GetStatus(), Additions: f.GetAdditions(), Deletions: f.GetDeletions(), Patch: f.GetPatch()})
			}
			return out, nil
		})
		p := newPanel(t, d, promptparts.BuiltinDefaults(), Deps{Tickets: store, PullFiles: files})
		tk, err := store.CreateTicket(ctx, d, tickets.Ticket{Title: "Fix the README typo", Repo: "acme/web"})
		require.NoError(t, err)
		require.NoError(t, store.SetPullRequest(ctx, d, tk.ID, "superagent/ticket-1", number))

		c := p.client(t)
		c.signIn("ada")
		res := c.get("/admin/tickets/" + itoa(tk.ID))
		require.Equal(t, http.StatusOK, res.status)
		body := html.UnescapeString(res.body)
		require.Contains(t, body, "Changed files")
		require.Contains(t, body, "<code>README.md</code>")
		require.Contains(t, body, "+1 −1")
		require.NotContains(t, body, "go.mod", "only what the pull request changes")
		require.Regexp(t, `<tr class="del">.*<td class="line">This projetc says hello.</td>`, body)
		require.Regexp(t, `<tr class="add">.*<td class="line">This project says hello.</td>`, body)
		require.Contains(t, body, `<tr class="hunk">`)

		// GitHub failing: the page still answers, and says so.
		gh.FailNext(http.MethodGet, "/repos/acme/web/pulls/"+itoa(int64(number))+"/files",
			fakegithub.Fault{Status: http.StatusNotFound, Body: `{"message":"Not Found","documentation_url":"https://docs.github.com/rest"}`})
		res = c.get("/admin/tickets/" + itoa(tk.ID))
		require.Equal(t, http.StatusOK, res.status)
		require.True(t, strings.Contains(res.body, "could not be read from GitHub"), "a note instead of the files")
	})
}

func TestPatchLines(t *testing.T) {
	t.Parallel()
	got := patchLines("@@ -1,2 +1,2 @@\n # Web\n-old\n+new\n\\ No newline at end of file")
	require.Equal(t, []patchLine{{"hunk", "@@ -1,2 +1,2 @@"}, {"same", "# Web"}, {"del", "old"}, {"add", "new"}, {"hunk", `\ No newline at end of file`}}, got)
	require.Nil(t, patchLines(""))
}
