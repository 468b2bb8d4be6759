package github

import (
	"crypto/hmac"
	"crypto/sha256"
	_ "embed" // the webhook schemas
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/superagent-dev/superagent/internal/testkit/contract"
)

// SignWebhook returns the X-Hub-Signature-256 value GitHub sends with a
// webhook delivery of body under secret.
func SignWebhook(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// webhookSchemas are GitHub's webhook payloads as JSON Schema (draft 7):
// schema.json of the npm package @octokit/webhooks-schemas 7.6.1 (MIT,
// testdata/webhooks/LICENSE), one definition per event, <event>_event.
//
//go:embed testdata/webhooks/schema.json
var webhookSchemas []byte

const webhookURL = "mem://contract/webhooks/schema.json"

var webhookCompiler = sync.OnceValues(func() (*contract.Compiler, error) {
	doc, err := contract.DecodeJSON(webhookSchemas)
	if err != nil {
		return nil, fmt.Errorf("decoding the webhook schemas: %w", err)
	}
	// Formats are annotations here, as in @octokit/webhooks' own checks of
	// its examples: GitHub has sent "2018-04-25 20:42:10" for an App's
	// created_at in check_run payloads (fixture check_run/rerequested).
	// Draft 7 asserts them by default, so they go.
	dropFormats(doc)
	c := contract.NewCompiler(false)
	if err := c.Add(webhookURL, doc); err != nil {
		return nil, err
	}
	return c, nil
})

// WebhookProblems checks a webhook payload of event (X-GitHub-Event)
// against GitHub's schema for it, and records the event and action as
// covered.
func WebhookProblems(event string, body []byte) []contract.Problem {
	where := "webhook " + event
	c, err := webhookCompiler()
	if err != nil {
		return []contract.Problem{{Where: where, Reason: err.Error()}}
	}
	var sch *contract.Schema
	for _, def := range []string{event + "_event", event + "$event"} { // ping is ping$event
		if s, err := c.Compile(webhookURL + "#/definitions/" + def); err == nil {
			sch = s
			break
		}
	}
	if sch == nil {
		return []contract.Problem{{Where: where, Reason: "no schema for this event in @octokit/webhooks-schemas"}}
	}
	v, err := contract.DecodeJSON(body)
	if err != nil {
		return []contract.Problem{{Where: where, Reason: "not JSON: " + err.Error()}}
	}
	var head struct {
		Action string `json:"action"`
	}
	_ = json.Unmarshal(body, &head)
	id := event
	if head.Action != "" {
		id += "." + head.Action
	}
	where = "webhook " + id
	problems := contract.Validate(sch, where, v)
	if len(problems) == 0 {
		contract.Cover("github-webhook", id)
	}
	return problems
}

// CheckWebhook fails t for each way body, a payload of event, breaks
// GitHub's webhook schema: every payload a test sends as GitHub should pass.
func CheckWebhook(t testing.TB, event string, body []byte) {
	t.Helper()
	for _, p := range WebhookProblems(event, body) {
		t.Errorf("fake GitHub: webhook payload breaks GitHub's schema: %s", p)
	}
}

// dropFormats removes every format keyword (a string; a property named
// format is an object) from a schema document.
func dropFormats(v any) {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["format"].(string); ok {
			delete(x, "format")
		}
		for _, e := range x {
			dropFormats(e)
		}
	case []any:
		for _, e := range x {
			dropFormats(e)
		}
	}
}
