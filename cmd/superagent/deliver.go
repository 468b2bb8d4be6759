package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/superagent-dev/superagent/internal/feishu"
)

const deliverUsage = `Usage:
  superagent deliver [-url URL] [-source github|feishu] [-event NAME]
                     [-secret S] [-token T] [-id ID] FILE
      send the payload in FILE to a running service as GitHub or Feishu
      would, signed, and print the answer; for trying the service and for
      replaying a delivery while debugging

      -url     the service, e.g. http://127.0.0.1:8080 (default: from
               SUPERAGENT_ADDR); /webhooks/github or /webhooks/feishu is
               added when the URL has no path
      -source  github or feishu (default: guessed from the payload)
      -event   GitHub's event name, X-GitHub-Event (default: guessed from
               the payload's fields, e.g. issue_comment)
      -secret  GitHub: the webhook secret (default:
               SUPERAGENT_GITHUB_WEBHOOK_SECRET); Feishu: the Encrypt Key
               (default: SUPERAGENT_FEISHU_ENCRYPT_KEY)
      -token   Feishu: the Verification Token put in the event when its
               header has none (default: SUPERAGENT_FEISHU_VERIFICATION_TOKEN)
      -id      GitHub: X-GitHub-Delivery (default: a new random id);
               Feishu: header.event_id (default: the payload's, or a new one)

  Exit status: 0 when the service answered 2xx, 1 otherwise, 2 for bad
  arguments.
`

// maxDeliverFile bounds the payload read: GitHub caps its own at 25 MB.
const maxDeliverFile = 25 << 20

// deliverCommand is `superagent deliver`.
func deliverCommand(ctx context.Context, cfg *config, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("deliver", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	target := fs.String("url", "", "")
	source := fs.String("source", "", "")
	event := fs.String("event", "", "")
	secret := fs.String("secret", "", "")
	token := fs.String("token", "", "")
	id := fs.String("id", "", "")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(stderr, "superagent deliver: %v\n\n%s", err, deliverUsage)
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "superagent deliver: name one payload file\n\n%s", deliverUsage)
		return 2
	}
	body, err := readPayload(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "superagent deliver:", err)
		return 2
	}
	if *source == "" {
		*source = guessSource(body)
	}
	base := *target
	if base == "" {
		if base, err = serviceURL(cfg.Addr); err != nil {
			fmt.Fprintln(stderr, "superagent deliver:", err)
			return 2
		}
	}
	var req *http.Request
	switch *source {
	case "github":
		req, err = githubDelivery(ctx, base, body, *event, or(*secret, cfg.GitHubWebhookSecret), *id)
	case "feishu":
		req, err = feishuDelivery(ctx, base, body, or(*secret, cfg.FeishuEncryptKey), or(*token, cfg.FeishuVerificationToken), cfg.FeishuAppID, *id)
	default:
		err = fmt.Errorf("-source %q: want github or feishu", *source)
	}
	if err != nil {
		fmt.Fprintln(stderr, "superagent deliver:", err)
		return 2
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintln(stderr, "superagent deliver:", err)
		return 1
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	fmt.Fprintf(stdout, "%s %s\n", req.URL, resp.Status)
	for _, h := range []string{"Content-Type", "Retry-After"} {
		if v := resp.Header.Get(h); v != "" {
			fmt.Fprintf(stdout, "%s: %s\n", h, v)
		}
	}
	if len(answer) > 0 {
		fmt.Fprintf(stdout, "\n%s\n", bytes.TrimRight(answer, "\n"))
	}
	if resp.StatusCode/100 != 2 {
		return 1
	}
	return 0
}

// readPayload reads a JSON payload file.
func readPayload(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	body, err := io.ReadAll(io.LimitReader(f, maxDeliverFile+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if len(body) > maxDeliverFile {
		return nil, fmt.Errorf("%s is larger than %d MB", name, maxDeliverFile>>20)
	}
	if !json.Valid(body) {
		return nil, fmt.Errorf("%s is not JSON", name)
	}
	return body, nil
}

// serviceURL is the base URL of the service listening on addr; a host
// left out or 0.0.0.0 means this machine.
func serviceURL(addr string) (string, error) {
	base, err := baseURL(addr)
	if err != nil {
		return "", fmt.Errorf("SUPERAGENT_ADDR %q: want host:port or :port, or give -url", addr)
	}
	return base, nil
}

// baseURL is http:// and a listen address, its wildcard or missing host
// replaced by the loopback interface.
func baseURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// endpoint is base with path added when base names none.
func endpoint(base, path string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("-url %q: want http://host:port or https://host", base)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = path
	}
	return u.String(), nil
}

// guessSource tells a Feishu event (schema 2.0, an encrypted body, a URL
// check) from a GitHub payload.
func guessSource(body []byte) string {
	var v map[string]json.RawMessage
	if json.Unmarshal(body, &v) != nil {
		return "github"
	}
	_, schema := v["schema"]
	_, encrypted := v["encrypt"]
	_, challenge := v["challenge"]
	if schema || encrypted || challenge {
		return "feishu"
	}
	return "github"
}

// githubEvents guess X-GitHub-Event from a payload's top-level fields,
// the first whose fields are all there winning.
var githubEvents = []struct {
	event  string
	fields []string
}{
	{"pull_request_review_comment", []string{"comment", "pull_request"}},
	{"pull_request_review_thread", []string{"thread", "pull_request"}},
	{"pull_request_review", []string{"review", "pull_request"}},
	{"issue_comment", []string{"comment", "issue"}},
	{"pull_request", []string{"pull_request"}},
	{"issues", []string{"issue"}},
	{"check_run", []string{"check_run"}},
	{"check_suite", []string{"check_suite"}},
	{"workflow_run", []string{"workflow_run"}},
	{"workflow_job", []string{"workflow_job"}},
	{"installation_repositories", []string{"repositories_added"}},
	{"installation_repositories", []string{"repositories_removed"}},
	{"installation", []string{"installation", "repositories"}},
	{"push", []string{"ref", "before", "after"}},
	{"ping", []string{"zen", "hook_id"}},
}

// guessEvent names the GitHub event of a payload, or "".
func guessEvent(body []byte) string {
	var v map[string]json.RawMessage
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	for _, e := range githubEvents {
		all := true
		for _, f := range e.fields {
			if _, ok := v[f]; !ok {
				all = false
				break
			}
		}
		if all {
			return e.event
		}
	}
	return ""
}

// githubDelivery is the request GitHub would make for a payload.
func githubDelivery(ctx context.Context, base string, body []byte, event, secret, id string) (*http.Request, error) {
	var problems []error
	if event == "" {
		if event = guessEvent(body); event == "" {
			problems = append(problems, errors.New("cannot tell the GitHub event from the payload: give -event (e.g. issue_comment)"))
		}
	}
	if secret == "" {
		problems = append(problems, errors.New("no webhook secret: set SUPERAGENT_GITHUB_WEBHOOK_SECRET or give -secret"))
	}
	u, err := endpoint(base, "/webhooks/github")
	if err != nil {
		problems = append(problems, err)
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	if id == "" {
		id = randomID()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/superagent-deliver")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	return req, nil
}

// feishuDelivery is the request Feishu would make for an event: the
// verification token, app id and event id filled in where the event's
// header has none, encrypted with the Encrypt Key and signed. A body
// that is already encrypted is signed as it is.
func feishuDelivery(ctx context.Context, base string, body []byte, encryptKey, token, appID, id string) (*http.Request, error) {
	var problems []error
	if encryptKey == "" {
		problems = append(problems, errors.New("no Encrypt Key: the service takes only encrypted, signed Feishu events; set SUPERAGENT_FEISHU_ENCRYPT_KEY or give -secret"))
	}
	u, err := endpoint(base, "/webhooks/feishu")
	if err != nil {
		problems = append(problems, err)
	}
	var event map[string]any
	if err := json.Unmarshal(body, &event); err != nil {
		problems = append(problems, fmt.Errorf("the payload is not a JSON object: %w", err))
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	if _, encrypted := event["encrypt"]; !encrypted {
		if header, ok := event["header"].(map[string]any); ok {
			fill := func(k, v string) {
				if s, _ := header[k].(string); s == "" && v != "" {
					header[k] = v
				}
			}
			if id != "" {
				header["event_id"] = id
			}
			fill("event_id", randomID())
			fill("token", token)
			fill("app_id", appID)
			fill("create_time", strconv.FormatInt(time.Now().UnixMilli(), 10))
		} else if s, _ := event["token"].(string); s == "" && token != "" {
			event["token"] = token // a URL check or a schema 1.0 event
		}
		plain, err := json.Marshal(event)
		if err != nil {
			return nil, err
		}
		enc, err := feishu.Encrypt(plain, encryptKey)
		if err != nil {
			return nil, err
		}
		if body, err = json.Marshal(map[string]string{"encrypt": enc}); err != nil {
			return nil, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	ts, nonce := strconv.FormatInt(time.Now().Unix(), 10), randomID()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "superagent-deliver")
	req.Header.Set(feishu.HeaderTimestamp, ts)
	req.Header.Set(feishu.HeaderNonce, nonce)
	req.Header.Set(feishu.HeaderSignature, feishu.Signature(ts, nonce, encryptKey, body))
	return req, nil
}

// randomID is a random UUID (version 4), as GitHub's delivery ids are.
func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
