package feishu_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/superagent-dev/superagent/internal/feishu"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
)

// The shape of POST /webhooks/feishu: authenticate, answer a challenge, parse,
// store under the dedupe key, answer. Storing is the caller's business (here a
// print); card actions may answer with a toast.
func Example_webhookHandler() {
	cfg := feishu.VerifierConfig{VerificationToken: testToken, EncryptKey: testEncryptKey}
	if err := cfg.Validate(); err != nil {
		return // the endpoint stays disabled (404)
	}
	v, _ := feishu.NewVerifier(cfg, func() time.Time { return testNow })
	botOpenID := "ou_84aad35d084aa403a838cf73ee18467" // from Client.BotOpenID in production

	handler := func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, feishu.MaxBodyBytes))
		if err != nil {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		in, err := v.Open(r.Header, body)
		if err != nil {
			http.Error(w, http.StatusText(feishu.Status(err)), feishu.Status(err))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if in.Challenge != "" {
			_, _ = w.Write(feishu.ChallengeResponse(in.Challenge))
			return
		}
		ev, err := feishu.Parse(in.Plain, feishu.ParseOptions{BotOpenID: botOpenID})
		if err != nil {
			// Authenticated but unreadable: record in.Plain as failed, answer 2xx.
			_, _ = w.Write([]byte(`{}`))
			return
		}
		// Store in.Plain under ev.DedupeKey() with its card and job, in one transaction.
		fmt.Println(ev.DedupeKey(), ev.Message.ChatType, ev.Message.MentionsBot, ev.Message.Text)
		_, _ = w.Write([]byte(`{}`))
	}

	// What Feishu sends (tests use fakefeishu.EventRequest for this).
	plain, _ := os.ReadFile("testdata/im.message.receive_v1.group_mention.json")
	body := fakefeishu.EncryptedBody(testEncryptKey, plain)
	req := httptest.NewRequest(http.MethodPost, "/webhooks/feishu", bytes.NewReader(body))
	req.Header = fakefeishu.SignedHeaders(testEncryptKey, body, testNow, "nonce")
	rec := httptest.NewRecorder()
	handler(rec, req)
	fmt.Println(rec.Code)

	// Output:
	// message:om_5ce6d572455d361153b7cb51da133945 group true @Tom hello
	// 200
}
