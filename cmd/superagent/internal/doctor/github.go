package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/superagent-dev/superagent/cmd/superagent/internal/setup"
	"github.com/superagent-dev/superagent/internal/githubapp"
)

// githubApp signs an App JWT and reads the App, lists its installations and
// mints an installation token for the first one: the whole chain the
// service depends on.
func (d *doctor) githubApp(ctx context.Context) Result {
	c := d.cfg
	if c.GitHubAppID == 0 || len(c.GitHubPrivateKey) == 0 {
		return skip("not checked: the App id or private key is not set")
	}
	client, err := githubapp.New(githubapp.Config{
		AppID: c.GitHubAppID, PrivateKey: c.GitHubPrivateKey, BaseURL: c.GitHubAPIURL,
		Transport: d.cfg.HTTPClient.Transport, MaxRetries: -1, MaxRetryWait: time.Second,
	})
	if err != nil {
		return fail("set SUPERAGENT_GITHUB_PRIVATE_KEY to the .pem file downloaded from the App's settings page", "%v", err)
	}
	app, _, err := client.App().Apps.Get(ctx, "")
	if err != nil {
		return githubFailure(err, c, "reading the App with its JWT")
	}
	name := fmt.Sprintf("App %q (id %d)", app.GetSlug(), c.GitHubAppID)
	installURL := app.GetHTMLURL() + "/installations/new"

	insts, _, err := client.App().Apps.ListInstallations(ctx, &github.ListOptions{PerPage: 100})
	if err != nil {
		return githubFailure(err, c, "listing the App's installations")
	}
	var active []*github.Installation
	var accounts []string
	for _, in := range insts {
		if in.SuspendedAt != nil {
			accounts = append(accounts, in.GetAccount().GetLogin()+" (suspended)")
			continue
		}
		active = append(active, in)
		accounts = append(accounts, in.GetAccount().GetLogin())
	}
	if len(active) == 0 {
		msg := fmt.Sprintf("%s authenticates but is installed nowhere", name)
		if len(insts) > 0 {
			msg = fmt.Sprintf("%s authenticates but every installation is suspended (%s)", name, strings.Join(accounts, ", "))
		}
		return warn("install the App on the repositories the agents may work in: "+installURL, "%s", msg)
	}
	first := active[0]
	if _, err := client.InstallationToken(ctx, first.GetID()); err != nil {
		return githubFailure(err, c, fmt.Sprintf("minting a token for installation %d (%s)", first.GetID(), first.GetAccount().GetLogin()))
	}
	msg := fmt.Sprintf("%s: installed on %s; minted an installation token for %s", name, strings.Join(accounts, ", "), first.GetAccount().GetLogin())
	var problems, fixes []string
	if gaps := appGaps(app); gaps != "" {
		problems = append(problems, "the App lacks "+gaps)
		fixes = append(fixes, "on the App's settings page (Permissions & events) grant "+gaps+", then accept the new permissions on each installation")
	}
	if problem, fix := hookProblem(ctx, client.App(), d.at("/webhooks/github")); problem != "" {
		problems = append(problems, problem)
		fixes = append(fixes, fix)
	}
	if len(problems) > 0 {
		return warn(strings.Join(fixes, "; "), "%s, but %s", msg, strings.Join(problems, ", and "))
	}
	return ok("%s", msg)
}

// hookProblem reads the App's webhook configuration and says what would
// keep deliveries from arriving. A failure to read it is not reported: the
// checks above already proved the credentials.
func hookProblem(ctx context.Context, app *github.Client, want string) (problem, fix string) {
	if !strings.HasPrefix(want, "http") {
		want = "https://<public host>" + want
	}
	fixURL := "on the App's settings page (General → Webhook) make it active with the URL " + want
	hook, resp, err := app.Apps.GetHookConfig(ctx)
	switch {
	case err != nil && resp != nil && resp.StatusCode == http.StatusNotFound:
		return "the App has no webhook", fixURL
	case err != nil:
		return "", ""
	case hook.GetURL() == "":
		return "the App has no webhook URL", fixURL
	case !strings.HasSuffix(strings.TrimRight(hook.GetURL(), "/"), "/webhooks/github"):
		return fmt.Sprintf("its webhooks go to %s, not to superagent's /webhooks/github", hook.GetURL()), fixURL
	case hook.GetInsecureSSL() == "1":
		return "its webhook skips TLS certificate checks", "on the App's settings page enable SSL verification for the webhook"
	}
	return "", ""
}

// appGaps lists the permissions and events the App lacks, when GitHub
// reported them.
func appGaps(app *github.App) string {
	var gaps []string
	if app.Permissions != nil {
		var have map[string]string
		b, _ := json.Marshal(app.Permissions)
		_ = json.Unmarshal(b, &have)
		for _, k := range sortedKeys(setup.Permissions(false)) {
			want := setup.Permissions(false)[k]
			if got := have[k]; got != want && got != "write" && got != "admin" {
				gaps = append(gaps, fmt.Sprintf("%s: %s", k, want))
			}
		}
	}
	if app.Events != nil {
		for _, e := range setup.Events() {
			if !slices.Contains(app.Events, e) {
				gaps = append(gaps, "the "+e+" event")
			}
		}
	}
	return strings.Join(gaps, ", ")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func githubFailure(err error, c Config, doing string) Result {
	var ge *github.ErrorResponse
	if errors.As(err, &ge) && ge.Response != nil {
		switch ge.Response.StatusCode {
		case http.StatusUnauthorized:
			return fail(fmt.Sprintf("check that SUPERAGENT_GITHUB_APP_ID=%d is the App the private key was generated for (generate a new key on the App's settings page if unsure), and that this machine's clock is right: App JWTs are refused when it is off by more than a minute", c.GitHubAppID),
				"GitHub refused the App's credentials while %s: %s", doing, ge.Message)
		case http.StatusNotFound:
			return fail("check SUPERAGENT_GITHUB_API_URL (GitHub Enterprise Server: https://<host>/api/v3) and that the App still exists",
				"GitHub answered 404 while %s", doing)
		case http.StatusForbidden:
			return fail("the installation may lack permissions or be suspended: review it under the owner's Settings → GitHub Apps",
				"GitHub refused %s: %s", doing, ge.Message)
		}
		return fail("retry later; see https://www.githubstatus.com", "GitHub answered %d while %s: %s", ge.Response.StatusCode, doing, ge.Message)
	}
	var rl *github.RateLimitError
	if errors.As(err, &rl) {
		return fail("wait until "+rl.Rate.Reset.Format(time.RFC3339), "the App is rate-limited while %s", doing)
	}
	return fail(fmt.Sprintf("check that this machine reaches %s (proxy, firewall, DNS)", c.GitHubAPIURL), "failed %s: %v", doing, err)
}
