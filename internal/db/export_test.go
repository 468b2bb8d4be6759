package db

import (
	"database/sql"
	"fmt"
	"sync/atomic"
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
