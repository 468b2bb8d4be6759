package people_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/people"
)

// A recorded actor is shown by the name people know: GitHub's @login, a
// Feishu user's name from the people table or else from the contact
// API's cache, and the account itself only when no name is known.
func TestActorName(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := people.New(d, nil)
		_, err := s.Create(ctx, people.Person{Name: "Ada Lovelace", GitHub: []string{"ada-l"}, FeishuOpenIDs: []string{"ou_ada"}})
		require.NoError(t, err)
		// Seen on Feishu while the contact API gave no name: the person is
		// named by the open_id, and the cache learned the name later.
		_, err = s.SeenOnFeishu(ctx, "ou_bo", "")
		require.NoError(t, err)
		_, err = d.Exec(ctx, `INSERT INTO feishu_users (open_id, name, fetched_at, error) VALUES ($1, $2, $3, '')`, "ou_bo", "Bo Zhang", time.Now().UTC())
		require.NoError(t, err)
		_, err = d.Exec(ctx, `INSERT INTO feishu_users (open_id, name, fetched_at, error) VALUES ($1, '', $2, 'outside the contact range')`, "ou_far", time.Now().UTC())
		require.NoError(t, err)

		for actor, want := range map[string]string{
			"github:Ada-L":          "@Ada-L",
			"github:someone-else":   "@someone-else",
			"feishu:ou_ada":         "Ada Lovelace",
			"feishu:ou_bo":          "Bo Zhang",
			"feishu:ou_far":         "feishu:ou_far",
			"feishu:ou_unknown":     "feishu:ou_unknown",
			"Ada Lovelace (@ada-l)": "Ada Lovelace (@ada-l)",
			"admin token":           "admin token",
			"admin:carol":           "admin:carol",
		} {
			got, err := people.ActorName(ctx, d, actor)
			require.NoError(t, err, actor)
			require.Equal(t, want, got, actor)
		}
		// Inside a transaction, as the acknowledgements ask.
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
			got, err := people.ActorName(ctx, tx, "feishu:ou_ada")
			require.Equal(t, "Ada Lovelace", got)
			return err
		}))
	})
}
