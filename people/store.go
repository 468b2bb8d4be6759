package people

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
)

// ErrNotFound is returned for a person that is not there.
var ErrNotFound = errors.New("no such person")

// InvalidError lists everything wrong with a person or a people file;
// nothing was changed.
type InvalidError struct{ Problems []string }

func (e *InvalidError) Error() string { return strings.Join(e.Problems, "; ") }

// Store reads and writes people.
type Store struct {
	db  *db.DB
	now func() time.Time
}

// New returns the store over d; now is the clock (nil: time.Now).
func New(d *db.DB, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{db: d, now: now}
}

// DB is the database the store writes.
func (s *Store) DB() *db.DB { return s.db }

// List returns everyone, by name.
func (s *Store) List(ctx context.Context) ([]Person, error) {
	return list(ctx, s.db, 0)
}

// Get returns the person with id.
func (s *Store) Get(ctx context.Context, q db.Querier, id int64) (Person, error) {
	ps, err := list(ctx, q, id)
	if err != nil {
		return Person{}, err
	}
	if len(ps) == 0 {
		return Person{}, ErrNotFound
	}
	return ps[0], nil
}

func list(ctx context.Context, q db.Querier, only int64) ([]Person, error) {
	rows, err := q.Query(ctx, `SELECT id, name, role, created_at, updated_at FROM people WHERE $1 = 0 OR id = $1 ORDER BY name, id`, only)
	if err != nil {
		return nil, fmt.Errorf("listing people: %w", err)
	}
	var out []Person
	index := map[int64]int{}
	for rows.Next() {
		var p Person
		if err := rows.Scan(&p.ID, &p.Name, &p.Role, &p.CreatedAt, &p.UpdatedAt); err != nil {
			rows.Close()
			return nil, fmt.Errorf("listing people: %w", err)
		}
		p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
		index[p.ID] = len(out)
		out = append(out, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing people: %w", err)
	}
	rows, err = q.Query(ctx, `SELECT person_id, kind, value FROM person_identities WHERE $1 = 0 OR person_id = $1 ORDER BY value`, only)
	if err != nil {
		return nil, fmt.Errorf("listing people's accounts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var kind, value string
		if err := rows.Scan(&id, &kind, &value); err != nil {
			return nil, fmt.Errorf("listing people's accounts: %w", err)
		}
		i, ok := index[id]
		if !ok {
			continue
		}
		switch kind {
		case KindGitHub:
			out[i].GitHub = append(out[i].GitHub, value)
		case KindFeishuOpenID:
			out[i].FeishuOpenIDs = append(out[i].FeishuOpenIDs, value)
		case KindFeishuUnionID:
			out[i].FeishuUnionIDs = append(out[i].FeishuUnionIDs, value)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing people's accounts: %w", err)
	}
	return out, nil
}

// By returns the person who holds the account (kind, value); false when
// nobody does. GitHub logins match whatever their case.
func (s *Store) By(ctx context.Context, q db.Querier, kind, value string) (Person, bool, error) {
	if value = accountValue(kind, value); value == "" {
		return Person{}, false, nil
	}
	var id int64
	err := q.QueryRow(ctx, `SELECT person_id FROM person_identities WHERE kind = $1 AND value = $2`, kind, value).Scan(&id)
	if errors.Is(err, db.ErrNoRows) {
		return Person{}, false, nil
	}
	if err != nil {
		return Person{}, false, fmt.Errorf("finding the person with %s %s: %w", kind, value, err)
	}
	p, err := s.Get(ctx, q, id)
	if err != nil {
		return Person{}, false, err
	}
	return p, true, nil
}

// NameOf returns the name of the person who holds the account (kind,
// value), in one statement: what a card names its author by. ok is false
// when nobody holds it. Inside a transaction that read it ahead (see
// ReadAheadName) it costs no statement of its own.
func (s *Store) NameOf(ctx context.Context, q db.Querier, kind, value string) (name string, ok bool, err error) {
	value = accountValue(kind, value)
	if value == "" {
		return "", false, nil
	}
	args := []any{kind, value}
	var v any
	if tx, isTx := q.(*db.Tx); isTx {
		v, err = tx.Read(ctx, nameAhead{kind, value}, nameQuery, args, scanName)
	} else {
		v, err = db.ReadNow(ctx, q, nameQuery, args, scanName)
	}
	if err != nil {
		return "", false, fmt.Errorf("finding the person with %s %s: %w", kind, value, err)
	}
	n := v.(foundName)
	return n.name, n.ok, nil
}

// ReadAheadName has tx read, with its next statement, what NameOf will
// ask it for.
func (s *Store) ReadAheadName(tx *db.Tx, kind, value string) {
	if value = accountValue(kind, value); value != "" {
		tx.ReadAhead(nameAhead{kind, value}, nameQuery, []any{kind, value}, scanName)
	}
}

const nameQuery = `SELECT p.name FROM person_identities i JOIN people p ON p.id = i.person_id WHERE i.kind = $1 AND i.value = $2`

// nameAhead is the key of a name read ahead; foundName what was read.
type nameAhead struct{ kind, value string }

type foundName struct {
	name string
	ok   bool
}

func scanName(rows db.Rows) (any, error) {
	var n foundName
	if rows.Next() {
		if err := rows.Scan(&n.name); err != nil {
			return nil, err
		}
		n.ok = true
	}
	return n, nil
}

// accountValue is value as accounts of kind are stored: GitHub logins in
// lower case, whatever case they came in.
func accountValue(kind, value string) string {
	if kind == KindGitHub {
		return strings.ToLower(value)
	}
	return value
}

// Recorder records a change to a person inside the transaction that makes
// it, so the change and its record land together or not at all. p is the
// person as changed (only the id for a removal).
type Recorder func(ctx context.Context, tx *db.Tx, p Person) error

func runAudits(ctx context.Context, tx *db.Tx, p Person, audits []Recorder) error {
	for _, a := range audits {
		if err := a(ctx, tx, p); err != nil {
			return err
		}
	}
	return nil
}

// Create stores a new person, refusing an invalid one or an account that
// belongs to someone else; audit, if given, records it in the same
// transaction.
func (s *Store) Create(ctx context.Context, p Person, audit ...Recorder) (Person, error) {
	p = Normalize(p)
	if problems := Problems("person", p); len(problems) > 0 {
		return Person{}, &InvalidError{problems}
	}
	var id int64
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		var err error
		if id, err = s.insert(ctx, tx, p, SourceAdmin); err != nil {
			return err
		}
		created := p
		created.ID = id
		return runAudits(ctx, tx, created, audit)
	})
	if err != nil {
		return Person{}, err
	}
	return s.Get(ctx, s.db, id)
}

// Update replaces the person's name, role and accounts; audit, if given,
// records it in the same transaction.
func (s *Store) Update(ctx context.Context, p Person, audit ...Recorder) (Person, error) {
	p = Normalize(p)
	if problems := Problems("person", p); len(problems) > 0 {
		return Person{}, &InvalidError{problems}
	}
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		n, err := tx.Exec(ctx, `UPDATE people SET name = $2, role = $3, updated_at = $4 WHERE id = $1`, p.ID, p.Name, p.Role, s.now().UTC())
		if err != nil {
			return fmt.Errorf("updating person %d: %w", p.ID, err)
		}
		if n == 0 {
			return ErrNotFound
		}
		if _, err := tx.Exec(ctx, `DELETE FROM person_identities WHERE person_id = $1`, p.ID); err != nil {
			return fmt.Errorf("updating person %d: %w", p.ID, err)
		}
		if err := s.endSessions(ctx, tx, &p.ID); err != nil {
			return err
		}
		if err := s.addIdentities(ctx, tx, p.ID, p, SourceAdmin); err != nil {
			return err
		}
		return runAudits(ctx, tx, p, audit)
	})
	if err != nil {
		return Person{}, err
	}
	return s.Get(ctx, s.db, p.ID)
}

// Delete removes the person and their accounts; audit, if given, records
// it in the same transaction.
func (s *Store) Delete(ctx context.Context, id int64, audit ...Recorder) error {
	return s.db.InTx(ctx, func(tx *db.Tx) error {
		n, err := tx.Exec(ctx, `DELETE FROM people WHERE id = $1`, id)
		if err != nil {
			return fmt.Errorf("deleting person %d: %w", id, err)
		}
		if n == 0 {
			return ErrNotFound
		}
		if err := s.endSessions(ctx, tx, &id); err != nil {
			return err
		}
		return runAudits(ctx, tx, Person{ID: id}, audit)
	})
}

// endSessions ends the panel sessions of person id (every person's when
// id is nil): a sign-in's role and name are the record's at that moment,
// so a changed or removed person signs in again, as what they are now.
func (s *Store) endSessions(ctx context.Context, tx *db.Tx, id *int64) error {
	var err error
	if id == nil {
		_, err = tx.Exec(ctx, `UPDATE admin_sessions SET revoked_at = $1 WHERE revoked_at IS NULL AND person_id IS NOT NULL`, s.now().UTC())
	} else {
		_, err = tx.Exec(ctx, `UPDATE admin_sessions SET revoked_at = $2 WHERE revoked_at IS NULL AND person_id = $1`, *id, s.now().UTC())
	}
	if err != nil {
		return fmt.Errorf("ending the panel sessions of changed people: %w", err)
	}
	return nil
}

// Replace makes the people list exactly list (the people file's import):
// every person is checked first, and on any problem nothing changes and
// every problem is reported. audit, when set, is written in the same
// transaction.
func (s *Store) Replace(ctx context.Context, list []Person, audit func(tx *db.Tx) error) error {
	for i := range list {
		list[i] = Normalize(list[i])
	}
	if problems := ListProblems(list); len(problems) > 0 {
		return &InvalidError{problems}
	}
	return s.db.InTx(ctx, func(tx *db.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM person_identities`); err != nil {
			return fmt.Errorf("replacing people: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM people`); err != nil {
			return fmt.Errorf("replacing people: %w", err)
		}
		for _, p := range list {
			if _, err := s.insert(ctx, tx, p, SourceAdmin); err != nil {
				return err
			}
		}
		if err := s.endSessions(ctx, tx, nil); err != nil {
			return err
		}
		if audit != nil {
			return audit(tx)
		}
		return nil
	})
}

func (s *Store) insert(ctx context.Context, tx *db.Tx, p Person, source string) (int64, error) {
	now := s.now().UTC()
	var id int64
	if err := tx.QueryRow(ctx, `INSERT INTO people (name, role, created_at, updated_at) VALUES ($1, $2, $3, $3) RETURNING id`,
		p.Name, p.Role, now).Scan(&id); err != nil {
		return 0, fmt.Errorf("adding person %s: %w", p.Name, err)
	}
	return id, s.addIdentities(ctx, tx, id, p, source)
}

func (s *Store) addIdentities(ctx context.Context, tx *db.Tx, id int64, p Person, source string) error {
	var problems []string
	for _, acc := range identities(p) {
		if err := s.addIdentity(ctx, tx, id, acc[0], acc[1], source); err != nil {
			var inv *InvalidError
			if !errors.As(err, &inv) {
				return err
			}
			problems = append(problems, inv.Problems...)
		}
	}
	if len(problems) > 0 {
		return &InvalidError{problems}
	}
	return nil
}

func (s *Store) addIdentity(ctx context.Context, tx *db.Tx, id int64, kind, value, source string) error {
	var other int64
	err := tx.QueryRow(ctx, `SELECT person_id FROM person_identities WHERE kind = $1 AND value = $2`, kind, value).Scan(&other)
	switch {
	case err == nil && other == id:
		return nil
	case err == nil:
		var name string
		_ = tx.QueryRow(ctx, `SELECT name FROM people WHERE id = $1`, other).Scan(&name)
		return &InvalidError{[]string{fmt.Sprintf("%s %q already belongs to %s (person %d)", kindText(kind), value, name, other)}}
	case !errors.Is(err, db.ErrNoRows):
		return fmt.Errorf("checking %s %s: %w", kind, value, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO person_identities (kind, value, person_id, source, created_at) VALUES ($1, $2, $3, $4, $5)`,
		kind, value, id, source, s.now().UTC()); err != nil {
		return fmt.Errorf("linking %s %s to person %d: %w", kind, value, id, err)
	}
	return nil
}

// SeenOnFeishu returns the person with the Feishu open_id, creating a
// member named name (or the open_id when Feishu gave no name) the first
// time; a person still named by their open_id takes the name once Feishu
// gives it.
func (s *Store) SeenOnFeishu(ctx context.Context, openID, name string) (Person, error) {
	name = strings.TrimSpace(name)
	p, ok, err := s.By(ctx, s.db, KindFeishuOpenID, openID)
	if err != nil {
		return Person{}, err
	}
	if ok {
		if name != "" && p.Name == openID {
			if _, err := s.db.Exec(ctx, `UPDATE people SET name = $2, updated_at = $3 WHERE id = $1`, p.ID, name, s.now().UTC()); err != nil {
				return Person{}, fmt.Errorf("naming person %d: %w", p.ID, err)
			}
			p.Name = name
		}
		return p, nil
	}
	if name == "" {
		name = openID
	}
	p = Normalize(Person{Name: name, Role: RoleMember, FeishuOpenIDs: []string{openID}})
	if problems := Problems("person", p); len(problems) > 0 {
		return Person{}, &InvalidError{problems}
	}
	var id int64
	err = s.db.InTx(ctx, func(tx *db.Tx) error {
		id, err = s.insert(ctx, tx, p, SourceFeishu)
		return err
	})
	if db.IsUniqueViolation(err) {
		// Another delivery of the same sender got there first.
		p, _, err := s.By(ctx, s.db, KindFeishuOpenID, openID)
		return p, err
	}
	if err != nil {
		return Person{}, err
	}
	return s.Get(ctx, s.db, id)
}

// LinkGitHub records that the Feishu user openID proved they hold the
// GitHub login (the OAuth round trip). If a person already holds the login
// and no Feishu open_id, the open_id joins that person (the Feishu-only
// record made when the user was first seen is folded into it); a login
// that belongs to a person with another Feishu account is refused.
func (s *Store) LinkGitHub(ctx context.Context, openID, login, feishuName string) (Person, error) {
	login = strings.ToLower(login)
	if !ValidLogin(login) {
		return Person{}, &InvalidError{[]string{fmt.Sprintf("%q is not a GitHub login", login)}}
	}
	if _, err := s.SeenOnFeishu(ctx, openID, feishuName); err != nil {
		return Person{}, err
	}
	var id int64
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		me, _, err := s.By(ctx, tx, KindFeishuOpenID, openID)
		if err != nil {
			return err
		}
		holder, held, err := s.By(ctx, tx, KindGitHub, login)
		if err != nil {
			return err
		}
		switch {
		case held && holder.ID == me.ID:
			id = me.ID
			return nil
		case held && len(holder.FeishuOpenIDs) > 0:
			return &InvalidError{[]string{fmt.Sprintf("the GitHub login %s belongs to %s, who has another Feishu account; an admin can link it", login, holder.Name)}}
		case held:
			// Fold the Feishu-only record into the person who holds the
			// login, keeping that person's name and role.
			if len(me.GitHub) > 0 {
				return &InvalidError{[]string{fmt.Sprintf("your Feishu account is already linked to GitHub %s; an admin can change it", strings.Join(me.GitHub, ", "))}}
			}
			if _, err := tx.Exec(ctx, `UPDATE person_identities SET person_id = $1 WHERE person_id = $2`, holder.ID, me.ID); err != nil {
				return fmt.Errorf("linking %s: %w", login, err)
			}
			if _, err := tx.Exec(ctx, `DELETE FROM people WHERE id = $1`, me.ID); err != nil {
				return fmt.Errorf("linking %s: %w", login, err)
			}
			id = holder.ID
			return nil
		}
		id = me.ID
		return s.addIdentity(ctx, tx, me.ID, KindGitHub, login, SourceOAuth)
	})
	if err != nil {
		return Person{}, err
	}
	return s.Get(ctx, s.db, id)
}

// Audit writes an entry to the panel's activity log (admin_audit) in q.
// actor names a person or "admin token".
func Audit(ctx context.Context, q db.Querier, at time.Time, actor, action, target, detail string) error {
	if _, err := q.Exec(ctx, `INSERT INTO admin_audit (created_at, actor, action, target, detail) VALUES ($1, $2, $3, $4, $5)`,
		at.UTC(), actor, action, target, detail); err != nil {
		return fmt.Errorf("recording %s in the activity log: %w", action, err)
	}
	return nil
}
