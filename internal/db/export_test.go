package db

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgxpool"
)

// CachedQueries returns the SQL texts conn's statement cache holds, most
// recently used first.
func CachedQueries(conn *sql.Conn) ([]string, error) {
	var queries []string
	err := conn.Raw(func(dc any) error {
		c, ok := dc.(*cachingConn)
		if !ok {
			return fmt.Errorf("%T is not a caching connection", dc)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for el := c.lru.Front(); el != nil; el = el.Next() {
			queries = append(queries, el.Value.(*cachedStmt).query)
		}
		return nil
	})
	return queries, err
}

// OpenCachingSQLite opens the SQLite file at path on one connection, as
// Open does, with a statement cache of size entries.
func OpenCachingSQLite(path string, size int) (*sql.DB, error) {
	_, dsn, err := sqliteDSN("sqlite://" + path)
	if err != nil {
		return nil, err
	}
	c, err := newCachingConnector(dsn, size, new(atomic.Int64))
	if err != nil {
		return nil, err
	}
	sqlDB := sql.OpenDB(c)
	sqlDB.SetMaxOpenConns(1)
	return sqlDB, nil
}

// OpenPostgresCountingWrites opens url as Open does, counting in writes
// every write to the server's socket, on one connection: a round trip's
// request is one.
func OpenPostgresCountingWrites(ctx context.Context, url string, writes *atomic.Int64) (*DB, error) {
	return openPostgres(ctx, url, Options{MaxConns: 1}, func(cfg *pgxpool.Config) {
		dialer := &net.Dialer{}
		cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countingConn{c, writes}, nil
		}
	})
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}
