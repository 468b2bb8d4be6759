package webhooks_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
)

// A long connection cut in the middle of a burst loses no event and stores
// none twice: Feishu sends again what was not acknowledged (the fake does
// too), the SDK reconnects, and storage dedupes on the message id.
func TestLongConnCutMidBurst(t *testing.T) {
	fakefeishu.SkipUnderRace(t)
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setupFeishu(t, d)
		const burst, cutAt = 20, 7
		var handled atomic.Int64
		reg := prometheus.NewRegistry()
		lc, err := feishu.NewLongConn(feishu.LongConnConfig{AppID: fakefeishu.AppID, AppSecret: "secret", BaseURL: e.fake.URL, Registerer: reg},
			func(ctx context.Context, plain []byte) error {
				if err := e.svc.FeishuEvent(ctx, plain); err != nil {
					return err
				}
				if handled.Add(1) == cutAt {
					// Stored, but the acknowledgement cannot get through.
					e.fake.DropConnections()
				}
				return nil
			}, nil, nil)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go func() { _ = lc.Run(ctx) }()
		wait, stop := context.WithTimeout(ctx, 20*time.Second)
		defer stop()
		require.NoError(t, e.fake.WaitConnects(wait, 1))

		for i := range burst {
			e.fake.Publish(patch(t, larkFixture(t, "im.message.receive_v1.p2p.json"), func(m map[string]any) {
				obj(m, "header")["event_id"] = fmt.Sprintf("ev_burst_%d", i)
				obj(m, "event", "message")["message_id"] = fmt.Sprintf("om_burst%028d", i)
			}))
		}
		for e.fake.Unacknowledged() > 0 {
			require.NoError(t, wait.Err(), "%d events never acknowledged", e.fake.Unacknowledged())
			time.Sleep(20 * time.Millisecond)
		}
		require.GreaterOrEqual(t, e.fake.Redeliveries(), 1, "the cut event was sent again")
		require.Greater(t, int(handled.Load()), burst-1, "every event reached the handler, one at least twice")
		require.Equal(t, burst, count(t, d, "SELECT COUNT(*) FROM deliveries WHERE source = 'feishu'"), "each stored once")
		for i := range burst {
			require.Equal(t, 1, count(t, d, "SELECT COUNT(*) FROM deliveries WHERE dedupe_key = $1", fmt.Sprintf("message:om_burst%028d", i)))
		}
		require.Equal(t, 2.0, counterValue(t, reg, "superagent_feishu_longconn_connects_total"), "connected, then reconnected once")
	})
}

// counterValue reads a registered counter.
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
