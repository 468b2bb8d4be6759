package people_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
	"github.com/superagent-dev/superagent/people"
)

func TestStoreCreateUpdateDelete(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := people.New(d, nil)
		ada, err := s.Create(ctx, people.Person{Name: " Ada ", Role: "admin", GitHub: []string{"@Ada-L"}, FeishuOpenIDs: []string{"ou_ada"}})
		require.NoError(t, err)
		require.Equal(t, "Ada", ada.Name)
		require.Equal(t, []string{"ada-l"}, ada.GitHub)

		got, ok, err := s.By(ctx, d, people.KindGitHub, "ADA-L")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, ada.ID, got.ID)

		// An account belongs to one person; a bad person changes nothing.
		_, err = s.Create(ctx, people.Person{Name: "Grace", GitHub: []string{"ada-l"}})
		var inv *people.InvalidError
		require.ErrorAs(t, err, &inv)
		require.Contains(t, inv.Error(), `github login "ada-l" already belongs to Ada`)
		_, err = s.Create(ctx, people.Person{Name: "", Role: "owner", GitHub: []string{"-x-"}, FeishuOpenIDs: []string{"oc_chat"}})
		require.ErrorAs(t, err, &inv)
		require.Len(t, inv.Problems, 4, inv.Problems)
		all, err := s.List(ctx)
		require.NoError(t, err)
		require.Len(t, all, 1)

		ada.Role, ada.GitHub = people.RoleMember, []string{"ada-l", "ada2"}
		ada, err = s.Update(ctx, ada)
		require.NoError(t, err)
		require.Equal(t, people.RoleMember, ada.Role)
		require.Equal(t, []string{"ada-l", "ada2"}, ada.GitHub)

		require.NoError(t, s.Delete(ctx, ada.ID))
		require.ErrorIs(t, s.Delete(ctx, ada.ID), people.ErrNotFound)
		_, ok, err = s.By(ctx, d, people.KindGitHub, "ada-l")
		require.NoError(t, err)
		require.False(t, ok)
	})
}

func TestReplaceListsEveryProblemAndChangesNothing(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := people.New(d, nil)
		_, err := s.Create(ctx, people.Person{Name: "Ada", Role: "admin", GitHub: []string{"ada"}})
		require.NoError(t, err)
		err = s.Replace(ctx, []people.Person{
			{Name: "Grace", Role: "boss", GitHub: []string{"grace"}},
			{Name: "", GitHub: []string{"grace"}, FeishuUnionIDs: []string{"ou_not_union"}},
		}, func(*db.Tx) error { return errors.New("the audit must not be written") })
		var inv *people.InvalidError
		require.ErrorAs(t, err, &inv)
		require.Equal(t, []string{
			`person 1 (Grace): role must be admin or member, not "boss"`,
			"person 2: name is required",
			`person 2: feishu union_id "ou_not_union" is not a Feishu union_id (on_…)`,
			`person 2: github login "grace" is also given to person 1`,
		}, inv.Problems)
		all, err := s.List(ctx)
		require.NoError(t, err)
		require.Len(t, all, 1)
		require.Equal(t, "Ada", all[0].Name)
	})
}

func TestLinkGitHubFoldsTheFeishuRecordIntoTheLoginsPerson(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := people.New(d, nil)
		seen, err := s.SeenOnFeishu(ctx, "ou_grace", "Grace H")
		require.NoError(t, err)
		require.Equal(t, people.RoleMember, seen.Role)
		admin, err := s.Create(ctx, people.Person{Name: "Grace Hopper", Role: "admin", GitHub: []string{"grace"}})
		require.NoError(t, err)

		p, err := s.LinkGitHub(ctx, "ou_grace", "Grace", "Grace H")
		require.NoError(t, err)
		require.Equal(t, admin.ID, p.ID)
		require.Equal(t, []string{"ou_grace"}, p.FeishuOpenIDs)
		all, err := s.List(ctx)
		require.NoError(t, err)
		require.Len(t, all, 1, "the Feishu-only record is folded in")

		// Another Feishu user cannot take a login that is linked already.
		_, err = s.LinkGitHub(ctx, "ou_mallory", "grace", "Mallory")
		var inv *people.InvalidError
		require.ErrorAs(t, err, &inv)
		p, _, err = s.By(ctx, d, people.KindGitHub, "grace")
		require.NoError(t, err)
		require.Equal(t, []string{"ou_grace"}, p.FeishuOpenIDs)
	})
}

func TestSignerRefusesForgedExpiredAndOtherPurpose(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := people.NewSigner("secret")
	tok := s.Sign(people.State{Purpose: "link", OpenID: "ou_a", Expires: now.Add(time.Minute).Unix()})
	st, err := s.Check(tok, "link", now)
	require.NoError(t, err)
	require.Equal(t, "ou_a", st.OpenID)
	for name, check := range map[string]func() error{
		"expired":       func() error { _, err := s.Check(tok, "link", now.Add(time.Minute)); return err },
		"other purpose": func() error { _, err := s.Check(tok, "signin", now); return err },
		"other key":     func() error { _, err := people.NewSigner("other").Check(tok, "link", now); return err },
		"tampered": func() error {
			_, err := s.Check(strings.Replace(tok, tok[:4], "eyJw", 1)+"x", "link", now)
			return err
		},
	} {
		require.ErrorIs(t, check(), people.ErrBadState, name)
	}
}

// TestOAuthLoginAgainstTheFake runs the web flow's three requests against
// the fake GitHub: authorize (redirect with code and state), exchange,
// GET /user. A code works once.
func TestOAuthLoginAgainstTheFake(t *testing.T) {
	gh := fakegithub.New(t)
	gh.SignInBrowser("Octo-Cat")
	o := &people.OAuth{ClientID: gh.ClientID(), ClientSecret: fakegithub.ClientSecret, WebURL: gh.URL, APIURL: gh.URL}
	redirect := "https://superagent.example.com/oauth/github/callback"
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noFollow.Get(o.AuthorizeURL("st4te", redirect))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusFound, res.StatusCode)
	loc, err := url.Parse(res.Header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, "superagent.example.com", loc.Host)
	require.Equal(t, "st4te", loc.Query().Get("state"))
	code := loc.Query().Get("code")

	login, err := o.Login(context.Background(), code, redirect)
	require.NoError(t, err)
	require.Equal(t, "octo-cat", login)
	_, err = o.Login(context.Background(), code, redirect)
	require.ErrorContains(t, err, "bad_verification_code")

	wrong := *o
	wrong.ClientSecret = "nope"
	_, err = wrong.Login(context.Background(), "x", redirect)
	require.ErrorContains(t, err, "incorrect_client_credentials")
	require.Empty(t, gh.Violations())
}

// A panel session holds the role its sign-in read: changing or removing
// the person, or importing the people file, ends their sessions so that
// they sign in again as what they are now. The admin token's session
// stays.
func TestChangingAPersonEndsTheirPanelSessions(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := people.New(d, nil)
		ada, err := s.Create(ctx, people.Person{Name: "Ada", Role: "admin", GitHub: []string{"ada"}})
		require.NoError(t, err)
		grace, err := s.Create(ctx, people.Person{Name: "Grace", Role: "admin", GitHub: []string{"grace"}})
		require.NoError(t, err)
		seed.AdminSession(t, d, "ada-1", &ada.ID)
		seed.AdminSession(t, d, "grace-1", &grace.ID)
		seed.AdminSession(t, d, "token-1", nil)
		live := func() []string {
			rows, err := d.Query(ctx, `SELECT id_sha256 FROM admin_sessions WHERE revoked_at IS NULL ORDER BY id_sha256`)
			require.NoError(t, err)
			defer rows.Close()
			var ids []string
			for rows.Next() {
				var id string
				require.NoError(t, rows.Scan(&id))
				ids = append(ids, id)
			}
			require.NoError(t, rows.Err())
			return ids
		}

		ada.Role = people.RoleMember
		_, err = s.Update(ctx, ada)
		require.NoError(t, err)
		require.Equal(t, []string{"grace-1", "token-1"}, live(), "Ada's admin session ends with her demotion")

		require.NoError(t, s.Delete(ctx, grace.ID))
		require.Equal(t, []string{"token-1"}, live())

		seed.AdminSession(t, d, "ada-2", &ada.ID)
		require.NoError(t, s.Replace(ctx, []people.Person{{Name: "Ada", Role: "member", GitHub: []string{"ada"}}}, nil))
		require.Equal(t, []string{"token-1"}, live(), "an import ends every person's session")
	})
}

// TestChangeAndItsRecordLandTogether: a change whose record cannot be
// written is not made, and a record is written with the change it names.
func TestChangeAndItsRecordLandTogether(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := people.New(d, nil)
		failing := func(context.Context, *db.Tx, people.Person) error { return errors.New("the log is full") }
		_, err := s.Create(ctx, people.Person{Name: "Ada", Role: "admin", GitHub: []string{"ada"}}, failing)
		require.ErrorContains(t, err, "the log is full")
		list, err := s.List(ctx)
		require.NoError(t, err)
		require.Empty(t, list, "nothing created")

		var recorded []people.Person
		record := func(_ context.Context, tx *db.Tx, p people.Person) error {
			recorded = append(recorded, p)
			return people.Audit(ctx, tx, time.Now(), "test", "person_change", "person", p.Name)
		}
		ada, err := s.Create(ctx, people.Person{Name: "Ada", Role: "admin", GitHub: []string{"ada"}}, record)
		require.NoError(t, err)
		require.Equal(t, ada.ID, recorded[0].ID, "the record names the stored person")

		ada.Role = "member"
		_, err = s.Update(ctx, ada, failing)
		require.Error(t, err)
		got, err := s.Get(ctx, d, ada.ID)
		require.NoError(t, err)
		require.Equal(t, "admin", got.Role, "nothing changed")

		require.Error(t, s.Delete(ctx, ada.ID, failing))
		_, err = s.Get(ctx, d, ada.ID)
		require.NoError(t, err, "nothing removed")
		require.NoError(t, s.Delete(ctx, ada.ID, record))
		require.Equal(t, ada.ID, recorded[1].ID)
		var n int
		require.NoError(t, d.QueryRow(ctx, "SELECT COUNT(*) FROM admin_audit WHERE action = 'person_change'").Scan(&n))
		require.Equal(t, 2, n)
	})
}
