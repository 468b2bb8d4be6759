package migrations_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/migrations"
)

// Migration 21 lets bodies be stored as S2 and keeps the encoding of every
// row stored before; rolled back, it empties only the S2 bodies, which the
// release before cannot read, and says so on their rows.
func TestBodyEncodingS2(t *testing.T) {
	t.Parallel()
	eachUnmigrated(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		require.NoError(t, migrations.ApplyTo(ctx, d, 20))
		insert := func(key, encoding string) {
			t.Helper()
			_, err := d.Exec(ctx, `INSERT INTO deliveries (source, dedupe_key, event, headers, body, body_encoding, received_at, state)
				VALUES ('github', $1, 'issue_comment', '{}', $2, $3, CURRENT_TIMESTAMP, 'received')`, key, []byte("stored as "+encoding), encoding)
			require.NoError(t, err)
		}
		insert("plain", "identity")
		insert("zstd", "zstd")
		_, err := d.Exec(ctx, `INSERT INTO deliveries (source, dedupe_key, event, headers, body, body_encoding, received_at, state)
			VALUES ('github', 'early', 'issue_comment', '{}', X'00', 's2', CURRENT_TIMESTAMP, 'received')`)
		require.Error(t, err, "s2 before migration 21")

		require.NoError(t, migrations.ApplyTo(ctx, d, 21))
		insert("s2", "s2")
		_, err = d.Exec(ctx, `INSERT INTO deliveries (source, dedupe_key, event, headers, body, body_encoding, received_at, state)
			VALUES ('github', 'other', 'issue_comment', '{}', X'00', 'gzip', CURRENT_TIMESTAMP, 'received')`)
		require.Error(t, err, "an encoding no release writes")
		require.Equal(t, map[string]row{
			"plain": {"identity", "stored as identity", ""},
			"zstd":  {"zstd", "stored as zstd", ""},
			"s2":    {"s2", "stored as s2", ""},
		}, deliveryRows(t, d))

		require.NoError(t, migrations.DownTo(ctx, d, 20))
		require.Equal(t, map[string]row{
			"plain": {"identity", "stored as identity", ""},
			"zstd":  {"zstd", "stored as zstd", ""},
			"s2":    {"identity", "", "body dropped: it was stored as s2"},
		}, deliveryRows(t, d))
	})
}

type row struct{ encoding, body, error string }

func deliveryRows(t *testing.T, d *db.DB) map[string]row {
	t.Helper()
	rows, err := d.Query(context.Background(), `SELECT dedupe_key, body_encoding, body, error FROM deliveries`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]row{}
	for rows.Next() {
		var key string
		var r row
		var body []byte
		require.NoError(t, rows.Scan(&key, &r.encoding, &body, &r.error))
		r.body = string(body)
		out[key] = r
	}
	require.NoError(t, rows.Err())
	return out
}
