package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/tickets"
)

// githubSeed is a fixture's event and a payload derived from it.
type githubSeed struct {
	event string
	body  []byte
}

// githubSeeds returns every fixture under testdata/github and, for each,
// the hostile variants mutations makes of it, down to depth levels.
func githubSeeds(tb testing.TB, depth int, topOnly bool) []githubSeed {
	tb.Helper()
	files, _ := filepath.Glob("testdata/github/*/*.json")
	var out []githubSeed
	for _, file := range files {
		body, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		event := filepath.Base(filepath.Dir(file))
		out = append(out, githubSeed{event, body})
		for _, m := range mutations(body, depth, topOnly) {
			out = append(out, githubSeed{event, m})
		}
	}
	return out
}

// mutations derives schema-valid but hostile payloads from a real one: each
// field down to depth levels removed, set to null, or given another JSON
// type. Below the top level only objects and arrays are touched (a missing
// scalar is a zero value to the parser; a missing object is a nil pointer),
// and, with topOnly, only removal, null and a string.
func mutations(body []byte, depth int, topOnly bool) [][]byte {
	var root map[string]any
	if json.Unmarshal(body, &root) != nil {
		return nil
	}
	var out [][]byte
	emit := func() {
		if b, err := json.Marshal(root); err == nil {
			out = append(out, b)
		}
	}
	var walk func(m map[string]any, level int)
	walk = func(m map[string]any, level int) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			v := m[k]
			child, isObj := v.(map[string]any)
			_, isArr := v.([]any)
			if level == 1 || isObj || isArr {
				others := []any{nil, "x"}
				if level == 1 && !topOnly {
					others = append(others, float64(1), true, []any{}, map[string]any{})
				} else if level == 1 {
					others = append(others, []any{})
				}
				delete(m, k)
				emit()
				for _, o := range others {
					m[k] = o
					emit()
				}
				m[k] = v
			}
			if isObj && level < depth {
				walk(child, level+1)
			}
		}
	}
	walk(root, 1)
	return out
}

// FuzzParseGitHub feeds arbitrary payloads under every event name, seeded
// with the fixtures and their hostile variants (fields removed, null or of
// another type, three levels down): the parser must never panic, and what
// it makes must be well formed.
func FuzzParseGitHub(f *testing.F) {
	for _, seed := range githubSeeds(f, 3, false) {
		f.Add(seed.event, seed.body)
	}
	f.Add("issue_comment", []byte(`{"action":"created","comment":{"body":"@superagent #1"},"issue":{"number":1},"repository":{"full_name":"a/b"}}`))
	f.Add("push", []byte(`{"ref":"refs/heads/x","repository":{"full_name":"a/b"},"commits":[{}]}`))
	f.Add("issues", []byte(`null`))
	f.Fuzz(func(t *testing.T, event string, body []byte) {
		ev, err := parseGitHub(event, body, "superagent")
		if err != nil {
			return
		}
		n := 0
		if ev.Drop != "" {
			n++
		}
		if ev.Card != nil {
			n++
			c := ev.Card
			if c.Thread.Key == "" || !strings.HasPrefix(c.Thread.Key, "github:") || c.Source != tickets.SourceGitHub || c.Kind == "" {
				t.Fatalf("ill-formed card %+v", c)
			}
			if c.Owner == "" || c.Name == "" {
				t.Fatalf("card without repository %+v", c)
			}
			if len(c.References) > maxReferences {
				t.Fatalf("%d references", len(c.References))
			}
			_ = tickets.Render(tickets.Card{Kind: c.Kind, Thread: c.Thread, Author: c.Author, Text: c.Text, References: c.References})
		}
		if ev.Install != nil {
			n++
		}
		if n != 1 {
			t.Fatalf("event %q made %d outcomes: %+v", event, n, ev)
		}
	})
}

// FuzzMentionsAndReferences checks the text scanners on any input.
func FuzzMentionsAndReferences(f *testing.F) {
	f.Add("@superagent please look at #12 and o/r#3 https://github.com/o/r/pull/4")
	f.Add("```\n@superagent\n```\n> @superagent\n`@superagent`")
	f.Add("@superagent[bot]x @superagent- a@superagent")
	f.Fuzz(func(t *testing.T, text string) {
		_ = mentions(text, "superagent")
		refs := dedupeRefs(references(text, "o/r"), "o/r", 1)
		for _, r := range refs {
			if r.Number <= 0 || r.Repo == "" {
				t.Fatalf("bad reference %+v in %q", r, text)
			}
		}
	})
}

// FuzzFeishuCards feeds arbitrary event JSON through the Feishu parser and
// the card conversion, seeded with the fixtures and their hostile variants:
// no panic, and any card is well formed.
func FuzzFeishuCards(f *testing.F) {
	files, _ := filepath.Glob("testdata/feishu/*.json")
	for _, file := range files {
		body, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(body)
		for _, m := range mutations(body, 3, false) {
			f.Add(m)
		}
	}
	f.Fuzz(func(t *testing.T, plain []byte) {
		ev, err := feishu.Parse(plain, feishu.ParseOptions{BotOpenID: "ou_bot"})
		if err != nil {
			return
		}
		var nc tickets.NewCard
		var drop string
		switch {
		case ev.Message != nil:
			nc, drop = feishuMessageCard(ev.Message, "ou_bot")
		case ev.CardAction != nil:
			nc, drop = feishuCardActionCard(ev.CardAction)
		default:
			return
		}
		if drop != "" {
			return
		}
		if !strings.HasPrefix(nc.Thread.Key, "feishu:") || nc.Source != tickets.SourceFeishu || nc.Kind == "" {
			t.Fatalf("ill-formed card %+v", nc)
		}
		_ = tickets.Render(tickets.Card{Kind: nc.Kind, Thread: nc.Thread, Author: nc.Author, Text: nc.Text, References: nc.References})
	})
}

// FuzzProcessGitHub feeds payloads through the ingest worker itself, on a
// real (SQLite) database, as a signed delivery would reach it: seeded with
// every fixture and each of its top-level fields removed, null, a string or
// an array. Working a delivery must not panic or fail the job, and must end
// it (processed, ignored or failed): a delivery left "received" would be
// retried by River for nothing.
func FuzzProcessGitHub(f *testing.F) {
	for _, seed := range githubSeeds(f, 1, true) {
		f.Add(seed.event, seed.body)
	}
	d := dbtest.SQLite(f)
	q := queue.New(d, queue.Config{InsertOnly: true})
	s, err := New(Config{GitHub: GitHubConfig{WebhookSecret: "fuzz", Slug: "superagent"}}, d, q, nil, nil, nil)
	if err != nil {
		f.Fatal(err)
	}
	if err := q.Init(); err != nil {
		f.Fatal(err)
	}
	ctx := context.Background()
	n := 0
	f.Fuzz(func(t *testing.T, event string, body []byte) {
		if !githubEvents[event] {
			return // recorded ignored by the handler, never worked
		}
		n++
		dl := Delivery{Source: "github", DedupeKey: fmt.Sprint("fuzz-", n), Event: event,
			Headers: map[string]string{}, Body: body, ReceivedAt: s.now(), State: DeliveryReceived}
		// Every other input is read on arrival, as the handler does, and
		// the job works whatever that left; the rest go to the job alone.
		var read *ghEvent
		if n%2 == 0 {
			read = s.readOnArrival(dl)
		}
		stored, err := s.record(ctx, dl, read)
		if err != nil {
			t.Fatal(err)
		}
		id := stored.id
		if err := s.process(ctx, id, permissionAttempts); err != nil {
			t.Fatalf("working %s delivery: %v", event, err)
		}
		got, err := getDelivery(ctx, d, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.State == DeliveryReceived {
			t.Fatalf("%s delivery left %q", event, got.State)
		}
	})
}
