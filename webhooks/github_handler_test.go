package webhooks_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	"github.com/superagent-dev/superagent/webhooks"
)

// countingReader is an endless body that counts what the server read.
type countingReader struct {
	n     int64
	limit int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.n >= c.limit {
		return 0, io.EOF
	}
	n := int64(len(p))
	if c.n+n > c.limit {
		n = c.limit - c.n
	}
	for i := range p[:n] {
		p[i] = ' '
	}
	c.n += n
	return int(n), nil
}

func TestRejections(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d)
		body := fixture(t, "issues/opened.payload.json")
		cases := []struct {
			name   string
			modify func(r *http.Request)
			status int
		}{
			{"unsigned", func(r *http.Request) { r.Header.Del("X-Hub-Signature-256") }, http.StatusUnauthorized},
			{"signature without prefix", func(r *http.Request) {
				r.Header.Set("X-Hub-Signature-256", strings.TrimPrefix(fakegithub.SignWebhook(secret, body), "sha256="))
			}, http.StatusUnauthorized},
			{"wrong secret", func(r *http.Request) { r.Header.Set("X-Hub-Signature-256", fakegithub.SignWebhook("other", body)) }, http.StatusUnauthorized},
			{"not hex", func(r *http.Request) { r.Header.Set("X-Hub-Signature-256", "sha256=zz") }, http.StatusUnauthorized},
			{"valid sha1 in the sha256 header", func(r *http.Request) {
				// go-github's ValidateSignature alone would accept it.
				mac := hmac.New(sha1.New, []byte(secret))
				mac.Write(body)
				r.Header.Set("X-Hub-Signature-256", "sha1="+hex.EncodeToString(mac.Sum(nil)))
			}, http.StatusUnauthorized},
			{"sha1 only", func(r *http.Request) {
				r.Header.Del("X-Hub-Signature-256")
				r.Header.Set("X-Hub-Signature", "sha1=0000")
			}, http.StatusUnauthorized},
			{"wrong target id", func(r *http.Request) { r.Header.Set("X-GitHub-Hook-Installation-Target-ID", "999") }, http.StatusForbidden},
			{"form content type", func(r *http.Request) { r.Header.Set("Content-Type", "application/x-www-form-urlencoded") }, http.StatusUnsupportedMediaType},
			{"no content type", func(r *http.Request) { r.Header.Del("Content-Type") }, http.StatusUnsupportedMediaType},
			{"no delivery id", func(r *http.Request) { r.Header.Del("X-GitHub-Delivery") }, http.StatusBadRequest},
			{"no event", func(r *http.Request) { r.Header.Del("X-GitHub-Event") }, http.StatusBadRequest},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				req := e.request(t, "issues", e.guid(), body)
				c.modify(req)
				require.Equal(t, c.status, e.send(t, req).Status)
			})
		}
		t.Run("tampered body", func(t *testing.T) {
			req := e.request(t, "issues", e.guid(), body)
			tampered := bytes.Replace(body, []byte("Spelling"), []byte("Spellinh"), 1)
			req.Body = io.NopCloser(bytes.NewReader(tampered))
			require.Equal(t, http.StatusUnauthorized, e.send(t, req).Status)
		})
		t.Run("charset is fine", func(t *testing.T) {
			req := e.request(t, "issues", e.guid(), body)
			req.Header.Set("Content-Type", "application/json; charset=utf-8")
			require.Equal(t, http.StatusAccepted, e.send(t, req).Status)
		})
		// Nothing was stored for any refused request.
		require.Equal(t, 1, count(t, d, "SELECT COUNT(*) FROM deliveries"))
	})
}

func TestDisabledWithoutSecret(t *testing.T) {
	t.Parallel()
	e := setup(t, dbtest.SQLite(t), func(c *webhooks.Config) { c.GitHub.WebhookSecret = "" })
	body := fixture(t, "issues/opened.payload.json")
	require.Equal(t, http.StatusNotFound, e.send(t, e.request(t, "issues", e.guid(), body)).Status)
}

func TestOversizedBodies(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	e := setup(t, d)
	r := chi.NewRouter()
	e.svc.Routes(r)

	t.Run("declared length over 25 MB is refused unread", func(t *testing.T) {
		body := &countingReader{limit: 26 << 20}
		req := httptest.NewRequest(http.MethodPost, "/webhooks/github", body)
		req.ContentLength = 26 << 20
		signed := e.rawRequest(t, "issues", e.guid(), nil)
		req.Header = signed.Header
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)
		require.Zero(t, body.n)
	})
	t.Run("undeclared length is cut at the limit", func(t *testing.T) {
		body := &countingReader{limit: 40 << 20}
		req := httptest.NewRequest(http.MethodPost, "/webhooks/github", body)
		req.ContentLength = -1
		signed := e.rawRequest(t, "issues", e.guid(), nil)
		req.Header = signed.Header
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)
		require.LessOrEqual(t, body.n, int64(webhooks.DefaultGitHubMaxBody+64<<10))
	})
	t.Run("over a configured limit through a real server", func(t *testing.T) {
		small := setup(t, dbtest.SQLite(t), func(c *webhooks.Config) { c.GitHub.MaxBody = 1024 })
		body := fixture(t, "issues/opened.payload.json")
		require.Greater(t, len(body), 1024)
		require.Equal(t, http.StatusRequestEntityTooLarge, small.send(t, small.request(t, "issues", small.guid(), body)).Status)
	})
	require.Zero(t, count(t, d, "SELECT COUNT(*) FROM deliveries"))
}

// Whatever the headers alone show cannot be a delivery of this App is
// refused before a byte of the body is read.
func TestRefusedFromTheHeadersAlone(t *testing.T) {
	t.Parallel()
	e := setup(t, dbtest.SQLite(t))
	r := chi.NewRouter()
	e.svc.Routes(r)
	cases := []struct {
		name   string
		modify func(h http.Header)
		status int
	}{
		{"no event", func(h http.Header) { h.Del("X-GitHub-Event") }, http.StatusBadRequest},
		{"event of another shape", func(h http.Header) { h.Set("X-GitHub-Event", "Issues; drop") }, http.StatusBadRequest},
		{"no delivery id", func(h http.Header) { h.Del("X-GitHub-Delivery") }, http.StatusBadRequest},
		{"delivery id with spaces", func(h http.Header) { h.Set("X-GitHub-Delivery", "a b") }, http.StatusBadRequest},
		{"no signature", func(h http.Header) { h.Del("X-Hub-Signature-256") }, http.StatusUnauthorized},
		{"short signature", func(h http.Header) { h.Set("X-Hub-Signature-256", "sha256=00") }, http.StatusUnauthorized},
		{"signature not hex", func(h http.Header) { h.Set("X-Hub-Signature-256", "sha256="+strings.Repeat("zz", 32)) }, http.StatusUnauthorized},
		{"another App", func(h http.Header) { h.Set("X-GitHub-Hook-Installation-Target-ID", "999") }, http.StatusForbidden},
		{"form content type", func(h http.Header) { h.Set("Content-Type", "application/x-www-form-urlencoded") }, http.StatusUnsupportedMediaType},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := &countingReader{limit: 1 << 20}
			req := httptest.NewRequest(http.MethodPost, "/webhooks/github", body)
			req.Header = e.rawRequest(t, "issues", e.guid(), nil).Header
			c.modify(req.Header)
			rec := httptest.NewRecorder()
			r.ServeHTTP(rec, req)
			require.Equal(t, c.status, rec.Code, rec.Body.String())
			require.Zero(t, body.n, "the body was read")
		})
	}
}

func TestRedelivery(t *testing.T) {
	t.Parallel()
	for _, c := range arrivals {
		t.Run(c.name, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, d *db.DB) {
				e := setup(t, d)
				body := c.body(t, fixture(t, "issue_comment/created.payload.json"))
				guid := e.guid()
				first := e.send(t, e.request(t, "issue_comment", guid, body))
				require.Equal(t, http.StatusAccepted, first.Status)
				again := e.send(t, e.request(t, "issue_comment", guid, body))
				require.Equal(t, http.StatusOK, again.Status)
				require.Equal(t, "duplicate", again.State)

				// At most one job was enqueued; working the delivery twice
				// (a retried job) makes one card, whether or not it was
				// made on arrival.
				require.Equal(t, c.jobs, count(t, d, "SELECT COUNT(*) FROM river_job WHERE kind = 'ingest_delivery'"))
				e.work(t, first.Delivery)
				e.work(t, first.Delivery)
				require.Equal(t, 1, count(t, d, "SELECT COUNT(*) FROM cards"))
				require.Equal(t, 1, count(t, d, "SELECT COUNT(*) FROM deliveries"))
				require.Len(t, e.hooked, 1)
			})
		})
	}
}

// arrivals are the two ways a delivery becomes a card: on arrival, in the
// transaction that stores it, when all it needs is in the database (the
// fixture repositories have no installation, so their authors' permission
// is "unknown" without asking); or by its job, when the payload names an
// installation and the author's permission is not cached.
var arrivals = []struct {
	name string
	body func(t testing.TB, body []byte) []byte
	jobs int
}{
	{name: "on arrival", body: func(_ testing.TB, b []byte) []byte { return b }, jobs: 0},
	{name: "by its job", body: throughInstallation, jobs: 1},
}

// throughInstallation makes a payload come through installation 1, as an
// App's deliveries do.
func throughInstallation(t testing.TB, body []byte) []byte {
	return patch(t, body, func(m map[string]any) {
		m["installation"] = map[string]any{"id": 1, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ=="}
	})
}

func TestMalformedAndUnknown(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d)
		t.Run("malformed JSON under a valid signature", func(t *testing.T) {
			a := e.send(t, e.rawRequest(t, "issues", e.guid(), []byte(`{"action": "opened", "issue": {`)))
			require.Equal(t, http.StatusAccepted, a.Status)
			e.work(t, a.Delivery)
			got := e.delivery(t, a.Delivery)
			require.Equal(t, webhooks.DeliveryFailed, got.State)
			require.Contains(t, got.Error, "parsing issues payload")
			e.work(t, a.Delivery) // a retried job changes nothing
			require.Equal(t, webhooks.DeliveryFailed, e.delivery(t, a.Delivery).State)
			require.Zero(t, count(t, d, "SELECT COUNT(*) FROM cards"))
		})
		t.Run("valid JSON of the wrong shape", func(t *testing.T) {
			a := e.send(t, e.rawRequest(t, "issues", e.guid(), []byte(`{"action": "opened", "issue": "not an object"}`)))
			require.Equal(t, http.StatusAccepted, a.Status)
			e.work(t, a.Delivery)
			got := e.delivery(t, a.Delivery)
			require.Equal(t, webhooks.DeliveryFailed, got.State)
			require.NotEmpty(t, got.Error)
		})
		t.Run("unknown event", func(t *testing.T) {
			a := e.send(t, e.rawRequest(t, "star", e.guid(), []byte(`{"action":"created"}`)))
			require.Equal(t, http.StatusAccepted, a.Status)
			got := e.delivery(t, a.Delivery)
			require.Equal(t, webhooks.DeliveryIgnored, got.State)
			require.Empty(t, got.Body)
		})
		require.Zero(t, count(t, d, "SELECT COUNT(*) FROM cards"))
		require.Equal(t, 2, count(t, d, "SELECT COUNT(*) FROM river_job WHERE kind = 'ingest_delivery'"))
	})
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	e := setup(t, dbtest.SQLite(t), func(c *webhooks.Config) { c.Registerer = reg })
	body := fixture(t, "issues/opened.payload.json")
	guid := e.guid()
	e.send(t, e.request(t, "issues", guid, body))
	e.send(t, e.request(t, "issues", guid, body))
	e.send(t, e.rawRequest(t, "made_up_event", e.guid(), body))
	bad := e.request(t, "issues", e.guid(), body)
	bad.Header.Set("X-Hub-Signature-256", "sha256=00")
	e.send(t, bad)

	families, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "superagent_webhook_deliveries_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			got[labels["event"]+"/"+labels["outcome"]] += m.GetCounter().GetValue()
		}
	}
	// The accepted delivery was also processed: its card was made on
	// arrival (the fixture's repository has no installation to ask).
	require.Equal(t, map[string]float64{
		"issues/accepted": 1, "issues/processed": 1, "issues/duplicate": 1, "other/ignored": 1, "issues/rejected": 1,
	}, got)
}

// TestBurst posts many deliveries at once, each twice: every 2xx delivery
// is stored once and makes exactly one card, on arrival or by its job.
func TestBurst(t *testing.T) {
	t.Parallel()
	for _, c := range arrivals {
		t.Run(c.name, func(t *testing.T) { burst(t, c.body, c.jobs > 0) })
	}
}

func burst(t *testing.T, prepare func(testing.TB, []byte) []byte, byJobs bool) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d)
		body := prepare(t, fixture(t, "issue_comment/created.payload.json"))
		const n = 30
		guids := make([]string, n)
		for i := range guids {
			guids[i] = e.guid()
		}
		var wg sync.WaitGroup
		answers := make(chan answer, 2*n)
		for _, g := range append(guids, guids...) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers <- e.send(t, e.request(t, "issue_comment", g, body))
			}()
		}
		wg.Wait()
		close(answers)
		var accepted []int64
		for a := range answers {
			switch a.Status {
			case http.StatusAccepted:
				accepted = append(accepted, a.Delivery)
			case http.StatusOK:
				require.Equal(t, "duplicate", a.State)
			default:
				t.Fatalf("status %d", a.Status)
			}
		}
		require.Len(t, accepted, n)
		// Each delivery is named by exactly one job: its own, or its batch's.
		argsText := "CAST(args AS TEXT)"
		if d.Dialect() == db.SQLite {
			argsText = "json(args)" // River keeps SQLite's args as JSONB
		}
		rows, err := d.Query(context.Background(), "SELECT "+argsText+" FROM river_job WHERE kind = 'ingest_delivery'")
		require.NoError(t, err)
		defer rows.Close()
		var named []int64
		var jobs []webhooks.ProcessArgs
		for rows.Next() {
			var raw string
			require.NoError(t, rows.Scan(&raw))
			var args webhooks.ProcessArgs
			require.NoError(t, json.Unmarshal([]byte(raw), &args))
			jobs = append(jobs, args)
			if args.DeliveryID != 0 {
				require.Empty(t, args.DeliveryIDs)
				named = append(named, args.DeliveryID)
			} else {
				require.Greater(t, len(args.DeliveryIDs), 1, "a batch job names several deliveries")
				named = append(named, args.DeliveryIDs...)
			}
		}
		require.NoError(t, rows.Err())
		if !byJobs {
			require.Empty(t, named, "every card was made on arrival")
			require.Equal(t, n, count(t, d, "SELECT COUNT(*) FROM cards"))
		} else {
			require.ElementsMatch(t, accepted, named)
			require.Zero(t, count(t, d, "SELECT COUNT(*) FROM cards"))
		}

		// Working the jobs as stored makes every card, once.
		for _, args := range jobs {
			job := &river.Job[webhooks.ProcessArgs]{JobRow: &rivertype.JobRow{Attempt: 1}, Args: args}
			require.NoError(t, e.svc.Worker().Work(context.Background(), job))
		}
		require.Equal(t, n, count(t, d, "SELECT COUNT(*) FROM cards"))
		require.Equal(t, n, count(t, d, "SELECT COUNT(*) FROM deliveries WHERE state = 'processed'"))
	})
}
