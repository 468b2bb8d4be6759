package feishu_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/superagent-dev/superagent/internal/feishu"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
)

var fuzzFixtures = []string{
	"url_verification.json",
	"card.action.trigger.json",
	"im.message.receive_v1.group_mention.json",
	"im.message.receive_v1.p2p.json",
	"extra.im.message.receive_v1.post_thread.json",
	"extra.im.message.receive_v1.file_p2p.json",
	"extra.im.chat.member.bot.added_v1.json",
}

var fixedIV = make([]byte, 16)

// FuzzOpenAndParse runs the whole inbound path on arbitrary plaintext,
// encrypted and signed as Feishu would, so mutations reach decryption,
// the token check and the parser.
func FuzzOpenAndParse(f *testing.F) {
	for _, name := range fuzzFixtures {
		f.Add(readFixture(f, name))
	}
	f.Add([]byte(`{"schema":"2.0","header":{"event_id":"1","event_type":"im.message.receive_v1","token":"` + testToken + `"},"event":{"message":{"message_id":"om_1","message_type":"post","content":"{\"zh_cn\":{\"content\":[[{\"tag\":\"at\",\"user_id\":\"@_user_1\"}]]}}"}}}`))
	v, err := feishu.NewVerifier(feishu.VerifierConfig{VerificationToken: testToken, EncryptKey: testEncryptKey},
		func() time.Time { return testNow })
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, plain []byte) {
		b, _ := json.Marshal(map[string]string{"encrypt": fakefeishu.EncryptWithIV(testEncryptKey, fixedIV, plain)})
		in, err := v.Open(signed(b, testNow), b)
		if err != nil {
			if feishu.Status(err) >= 500 {
				t.Fatalf("inbound error without a 4xx status: %v", err)
			}
			return
		}
		if in.Challenge != "" {
			return
		}
		ev, err := feishu.Parse(in.Plain, feishu.ParseOptions{BotOpenID: fakefeishu.BotOpenID})
		if err != nil {
			if feishu.Status(err) != 400 {
				t.Fatalf("parse error not malformed: %v", err)
			}
			return
		}
		if ev.ID == "" || ev.Type == "" || ev.DedupeKey() == "" {
			t.Fatalf("parsed event without identity: %+v", ev)
		}
		if ev.Message != nil && ev.Message.ID == "" {
			t.Fatalf("message without id: %+v", ev.Message)
		}
	})
}

// FuzzOpenCiphertext feeds arbitrary "encrypt" values, signed, to Open.
func FuzzOpenCiphertext(f *testing.F) {
	for _, name := range fuzzFixtures {
		f.Add(fakefeishu.EncryptWithIV(testEncryptKey, fixedIV, readFixture(f, name)))
	}
	f.Add("AAAA")
	f.Add("")
	v, err := feishu.NewVerifier(feishu.VerifierConfig{VerificationToken: testToken, EncryptKey: testEncryptKey},
		func() time.Time { return testNow })
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, enc string) {
		b, _ := json.Marshal(map[string]string{"encrypt": enc})
		_, _ = v.Open(signed(b, testNow), b)
		_, _ = v.Open(nil, b) // unsigned
		_, _ = feishu.Decrypt(enc, testEncryptKey)
	})
}

// FuzzText checks that untrusted text can never carry markup.
func FuzzText(f *testing.F) {
	for _, s := range []string{"<at id=all></at>", `<at user_id="all">x</at>`, "&lt;at&gt;", "plain", "\"\\\n\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := feishu.Text(s)
		if err != nil {
			return
		}
		var body struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal([]byte(c.JSON), &body); err != nil {
			t.Fatalf("text content is not JSON: %v", err)
		}
		if strings.ContainsAny(body.Text, "<>") {
			t.Fatalf("markup survived escaping: %q", body.Text)
		}
	})
}
