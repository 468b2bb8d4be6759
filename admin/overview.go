package admin

import (
	"net/http"

	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/tickets"
)

// overviewPage is the landing page: what needs attention.
type overviewPage struct {
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
	if a.deps.Connections != nil {
		for _, c := range a.deps.Connections(ctx) {
			cv := connectionView{Connection: c}
			if err := seen(ctx, a.db, &cv); err != nil {
				return err
			}
			if !cv.Healthy() {
				p.Unhealthy++
			}
			p.Connections = append(p.Connections, cv)
		}
	}
	if a.deps.Tickets != nil {
		if p.Inbox, err = a.deps.Tickets.UnroutedCards(ctx, a.db, inboxSize); err != nil {
			return err
		}
	}
	return a.render(w, r, http.StatusOK, "overview.html", pageData{Title: "Overview", Data: p})
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
