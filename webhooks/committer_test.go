package webhooks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
)

// TestCommitterGroupsAndIsolates submits many deliveries at once: each
// gets its own answer, duplicates are caught inside and across batches,
// and a delivery that cannot be written fails alone.
func TestCommitterGroupsAndIsolates(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	c := &committer{d: d, max: 64, slots: 1, write: func(ctx context.Context, tx *db.Tx, ds []Delivery, _ []*ghEvent) ([]written, error) {
		for _, dl := range ds {
			if dl.DedupeKey == "poison" {
				return nil, errors.New("cannot write this one")
			}
		}
		return insertDeliveries(ctx, tx, ds)
	}}

	const n = 40
	type result struct {
		key string
		id  int64
		dup bool
		err error
	}
	results := make(chan result, 2*n+1)
	var wg sync.WaitGroup
	submit := func(key string) {
		defer wg.Done()
		dl := Delivery{Source: "github", DedupeKey: key, Event: "issues", Body: []byte("{}"), ReceivedAt: time.Now().UTC(), State: DeliveryIgnored}
		stored, err := c.submit(context.Background(), dl, nil)
		results <- result{key, stored.id, stored.dup, err}
	}
	for i := range n {
		wg.Add(2)
		go submit(fmt.Sprintf("k%d", i))
		go submit(fmt.Sprintf("k%d", i))
	}
	wg.Add(1)
	go submit("poison")
	wg.Wait()
	close(results)

	ids := map[string]int64{}
	dups := 0
	for r := range results {
		if r.key == "poison" {
			require.Error(t, r.err)
			continue
		}
		require.NoError(t, r.err)
		if r.dup {
			dups++
			continue
		}
		require.NotZero(t, r.id)
		_, seen := ids[r.key]
		require.False(t, seen, "two stores of %s", r.key)
		ids[r.key] = r.id
	}
	require.Len(t, ids, n)
	require.Equal(t, n, dups)
	var stored int
	require.NoError(t, d.QueryRow(context.Background(), "SELECT COUNT(*) FROM deliveries").Scan(&stored))
	require.Equal(t, n, stored)

	c.mu.Lock()
	defer c.mu.Unlock()
	require.Zero(t, c.running)
	require.Empty(t, c.pending)
}

func TestCommitterSkipsEndedRequests(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	c := &committer{d: d, max: 64, slots: 1, write: func(ctx context.Context, tx *db.Tx, ds []Delivery, _ []*ghEvent) ([]written, error) {
		return insertDeliveries(ctx, tx, ds)
	}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.submit(ctx, Delivery{Source: "github", DedupeKey: "gone", Event: "issues", ReceivedAt: time.Now().UTC(), State: DeliveryIgnored}, nil)
	require.ErrorIs(t, err, context.Canceled)
	stored, err := c.submit(context.Background(), Delivery{Source: "github", DedupeKey: "gone", Event: "issues", ReceivedAt: time.Now().UTC(), State: DeliveryIgnored}, nil)
	require.NoError(t, err)
	require.False(t, stored.dup)
	require.NotZero(t, stored.id)
}
