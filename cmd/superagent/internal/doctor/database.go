package doctor

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/migrations"
)

// sqlitePath returns the file a SQLite URL names, or "" for PostgreSQL.
func sqlitePath(raw string) string {
	if strings.HasPrefix(raw, "postgres://") || strings.HasPrefix(raw, "postgresql://") {
		return ""
	}
	p := strings.TrimPrefix(strings.TrimPrefix(raw, "sqlite://"), "file:")
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	return p
}

func (d *doctor) database(ctx context.Context) Result {
	raw := d.cfg.DatabaseURL
	if raw == "" {
		d.dbErr = errors.New("no database URL")
		return fail("set SUPERAGENT_DATABASE_URL, or leave it unset for the SQLite file in the data directory", "no database is configured")
	}
	if path := sqlitePath(raw); path != "" {
		// Opening would create the file; the doctor changes nothing.
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			d.dbErr = err
			return fail("run `superagent migrate` (or start `superagent serve`), which creates and migrates it",
				"the SQLite database %s does not exist yet", path)
		}
	}
	h, err := db.Open(ctx, raw, db.Options{MaxConns: 2})
	if err != nil {
		d.dbErr = err
		fix := "check SUPERAGENT_DATABASE_URL (host, port, user, password, database name) and that the server accepts connections from here"
		if sqlitePath(raw) != "" {
			fix = "check that the SQLite file and its directory are readable and writable by this user, and not on a network file system"
		}
		return fail(fix, "cannot open the database: %v", err)
	}
	if err := h.Ping(ctx); err != nil {
		_ = h.Close()
		d.dbErr = err
		return fail("check that the database server is up", "the database does not answer: %v", err)
	}
	d.db = h
	return ok("%s database answers", h.Dialect())
}

func (d *doctor) migrations(ctx context.Context) Result {
	if d.db == nil {
		return skip("not checked: the database is unreachable")
	}
	pending, err := migrations.Pending(ctx, d.db)
	if err != nil {
		return fail("check that the database user may read the schema", "cannot read the migration state: %v", err)
	}
	if pending {
		return fail("run `superagent migrate` once (serve also migrates at start; workers wait for it)",
			"the schema is behind this binary: migrations are pending")
	}
	return ok("the schema is up to date")
}
