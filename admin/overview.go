package admin

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/internal/modelhealth"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/tickets"
)

// overviewPage is the landing page: what needs attention.
type overviewPage struct {
	// Arrives says how work arrives (Admin.workArrives).
	Arrives        string
	Revision       int64
	Latest         *promptparts.VersionInfo
	DefaultUpdated []string
	Overridden     int
	Skills         int
	Mode           string
	EnabledRules   int
	Rules          int
	// Connections are the deployment's connections, with what was last
	// seen of each; Unhealthy counts those not configured or failing.
	Connections []connectionView
	Unhealthy   int
	// Inbox is the cards that never became Tickets, newest first; nil
	// when Tickets are not available here.
	Inbox []tickets.Unrouted
	// HeldUp is the main Session's model while it fails: the candidates
	// wait for it, and say so.
	HeldUp *modelhealth.Status
}

// inboxSize is how many unrouted cards the overview lists.
const inboxSize = 30

func (a *Admin) getOverview(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	sum, err := a.prompts.ReadPrompts(ctx)
	if err != nil {
		return err
	}
	v, err := a.prompts.Latest(ctx)
	if err != nil {
		return err
	}
	p := overviewPage{
		Arrives:        a.workArrives(),
		Revision:       sum.Revision,
		DefaultUpdated: sum.DefaultChanged,
		Overridden:     len(sum.Overridden),
		Skills:         len(sum.Skills),
		Mode:           string(v.Settings.Policy.Mode),
		EnabledRules:   len(v.Settings.Policy.Enabled()),
		Rules:          len(v.Settings.Policy.Rules),
	}
	if v.Revision > 0 {
		p.Latest = &v.VersionInfo
	}
	if p.Connections, err = a.connections(ctx); err != nil {
		return err
	}
	for _, c := range p.Connections {
		if !c.Healthy() {
			p.Unhealthy++
		}
	}
	if a.deps.Tickets != nil {
		if p.Inbox, err = a.deps.Tickets.UnroutedCards(ctx, a.db, inboxSize); err != nil {
			return err
		}
		main, err := modelhealth.Read(ctx, a.db, modelhealth.Main)
		if err != nil {
			return err
		}
		if main.Failing() {
			p.HeldUp = &main
		}
	}
	return a.render(w, r, http.StatusOK, "overview.html", pageData{Title: "Overview", Data: p})
}

// connections are the deployment's connections with what the database
// last saw of each; none when this process does not report them.
func (a *Admin) connections(ctx context.Context) ([]connectionView, error) {
	if a.deps.Connections == nil {
		return nil, nil
	}
	var out []connectionView
	for _, c := range a.deps.Connections(ctx) {
		cv := connectionView{Connection: c}
		if err := seen(ctx, a.db, &cv); err != nil {
			return nil, err
		}
		out = append(out, cv)
	}
	return out, nil
}

// connectionJSON is a connection as GET /api/connections shows it: what
// the overview shows.
type connectionJSON struct {
	Kind         string    `json:"kind"`
	Name         string    `json:"name"`
	Configured   bool      `json:"configured"`
	Detail       string    `json:"detail,omitempty"`
	Healthy      bool      `json:"healthy"`
	LastOK       time.Time `json:"last_ok,omitzero"`
	LastOKWhat   string    `json:"last_ok_what,omitempty"`
	LastFailure  time.Time `json:"last_failure,omitzero"`
	Failure      string    `json:"failure,omitempty"`
	FailingSince time.Time `json:"failing_since,omitzero"`
	WaitingJobs  int       `json:"waiting_jobs,omitempty"`
	Hint         string    `json:"hint"`
}

// OverviewRoutes mounts the overview's API on r (under /api):
// GET /connections.
func (a *Admin) OverviewRoutes(r chi.Router) {
	r.Get("/connections", httpserver.HandleWith(a.cfg.Logger, a.apiConnections))
}

func (a *Admin) apiConnections(w http.ResponseWriter, r *http.Request) error {
	cs, err := a.connections(r.Context())
	if err != nil {
		return err
	}
	out := make([]connectionJSON, 0, len(cs))
	for _, c := range cs {
		out = append(out, connectionJSON{Kind: c.Kind, Name: c.Name, Configured: c.Configured, Detail: c.Detail, Healthy: c.Healthy(),
			LastOK: c.LastOK, LastOKWhat: c.OKWhat, LastFailure: c.LastFailure, Failure: c.Failure, FailingSince: c.FailingSince,
			WaitingJobs: c.WaitingJobs, Hint: c.Hint})
	}
	httpserver.WriteJSON(w, http.StatusOK, out)
	return nil
}

// activityPage lists recent panel activity beside recent versions.
type activityPage struct {
	Entries  []auditEntry
	Versions []promptparts.VersionInfo
}

func (a *Admin) getActivity(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	entries, err := a.audit.list(ctx, a.db, 200)
	if err != nil {
		return err
	}
	vs, err := a.prompts.Versions(ctx, 0, 20)
	if err != nil {
		return err
	}
	return a.render(w, r, http.StatusOK, "activity.html", pageData{Title: "Activity", Nav: "activity", Data: activityPage{Entries: entries, Versions: vs}})
}

// getRoot leads / to the panel: the overview when signed in, else the
// sign-in (which comes back to the overview).
func (a *Admin) getRoot(w http.ResponseWriter, r *http.Request) {
	if _, ok := a.sessionOf(r); ok {
		http.Redirect(w, r, "/admin/", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/admin/signin?next="+url.QueryEscape("/admin/"), http.StatusSeeOther)
}

// workArrives says how work reaches the service as it is set up, for
// pages that have none yet.
func (a *Admin) workArrives() string {
	var ways []string
	if b := a.cfg.GitHubBot; b != "" {
		ways = append(ways, "mention @"+b+" in an issue, a pull request or a comment on a repository where the GitHub App is installed")
	}
	if a.cfg.Feishu {
		ways = append(ways, "mention the bot in a Feishu group it was added to, or write to it directly")
	}
	switch len(ways) {
	case 0:
		return "Nothing can bring work yet: neither GitHub nor Feishu is set up. The overview's Connections say what to configure."
	case 1:
		return "Work arrives when people " + ways[0] + "."
	}
	return "Work arrives when people " + ways[0] + ", or " + ways[1] + "."
}
