package people

import (
	"context"
	"fmt"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
)

// ActorName is how an actor recorded on a Ticket (who paused, stopped,
// continued or retried it) is shown to people: on cards, in
// acknowledgements, progress comments and the panel. Records and logs
// keep the actor itself.
//
// A GitHub account ("github:<login>", tickets.Actor) is shown as @login.
// A Feishu account ("feishu:<open_id>") is shown by the name of the person
// who holds it, else by the name Feishu's contact API gave for it (the
// webhooks' feishu_users cache), and by the actor itself only when no name
// is known. Any other actor (a panel session's "Name (@login)", an API
// token's name) is already a name and is returned as it is.
//
// On an error the actor itself is returned with it, so a caller can show
// that and log the error.
func ActorName(ctx context.Context, q db.Querier, actor string) (string, error) {
	source, id, ok := strings.Cut(actor, ":")
	if !ok || id == "" {
		return actor, nil
	}
	switch source {
	case "github":
		if ValidLogin(id) {
			return "@" + id, nil
		}
	case "feishu":
		var name string
		// A person still named by their open_id (Feishu gave no name when
		// they were first seen) has no name yet.
		err := q.QueryRow(ctx, `SELECT COALESCE(
    (SELECT p.name FROM person_identities i JOIN people p ON p.id = i.person_id
     WHERE i.kind = 'feishu_open_id' AND i.value = $1 AND p.name <> $1),
    (SELECT name FROM feishu_users WHERE open_id = $1 AND name <> ''),
    '')`, id).Scan(&name)
		if err != nil {
			return actor, fmt.Errorf("finding the name of %s: %w", actor, err)
		}
		if name = strings.TrimSpace(name); name != "" {
			return name, nil
		}
	}
	return actor, nil
}
