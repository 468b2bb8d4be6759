package setup

// Manifest is the GitHub App manifest posted to GitHub's "new App" page.
// Field names follow GitHub's manifest parameters.
type Manifest struct {
	Name           string         `json:"name"`
	URL            string         `json:"url"`
	Description    string         `json:"description,omitempty"`
	HookAttributes HookAttributes `json:"hook_attributes"`
	RedirectURL    string         `json:"redirect_url"`
	// CallbackURLs are where GitHub may send a person back after they
	// authorize the App (its OAuth client): the panel's sign-in.
	CallbackURLs       []string          `json:"callback_urls"`
	Public             bool              `json:"public"`
	DefaultPermissions map[string]string `json:"default_permissions"`
	DefaultEvents      []string          `json:"default_events"`
}

// HookAttributes is the webhook part of a Manifest.
type HookAttributes struct {
	URL    string `json:"url"`
	Active bool   `json:"active"`
}

// Permissions returns the repository permissions the service needs: it
// pushes branches, opens and updates pull requests, comments on issues,
// reads check results, reads GitHub Actions runs and their jobs' logs (and
// receives workflow_run events) and reads repository metadata. Workflows write is added
// only when the agents may change CI files, since GitHub refuses pushes that
// touch .github/workflows without it.
func Permissions(workflows bool) map[string]string {
	p := map[string]string{
		"contents":      "write",
		"pull_requests": "write",
		"issues":        "write",
		"checks":        "write",
		// workflow_run events reach an App only with Actions read, and
		// the jobs' logs are read with it.
		"actions":  "read",
		"metadata": "read",
	}
	if workflows {
		p["workflows"] = "write"
	}
	return p
}

// Events are the webhook events the service consumes (docs/architecture.md#github-events). GitHub
// sends installation events to every App without asking.
func Events() []string {
	return []string{
		"issues", "issue_comment",
		"pull_request", "pull_request_review", "pull_request_review_comment", "pull_request_review_thread",
		"check_run", "check_suite", "workflow_run",
		"push",
	}
}
