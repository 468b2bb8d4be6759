package webhooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/tickets"
)

// FuzzParseGitHub feeds arbitrary payloads under every event name: the
// parser must never panic, and what it makes must be well formed.
func FuzzParseGitHub(f *testing.F) {
	files, _ := filepath.Glob("testdata/github/*/*.json")
	for _, file := range files {
		body, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(filepath.Base(filepath.Dir(file)), body)
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
// the card conversion: no panic, and any card is well formed.
func FuzzFeishuCards(f *testing.F) {
	files, _ := filepath.Glob("testdata/feishu/*.json")
	for _, file := range files {
		body, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(body)
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
