package migrations

import (
	"context"

	"github.com/superagent-dev/superagent/internal/db"
)

// ApplyTo is applyTo, for the external tests.
var ApplyTo = applyTo

// DownTo rolls the application's migrations back to version, for tests of
// what a rollback leaves of data stored after it.
func DownTo(ctx context.Context, d *db.DB, version int64) error {
	provider, err := newProvider(d)
	if err != nil {
		return err
	}
	_, err = provider.DownTo(ctx, version)
	return err
}
