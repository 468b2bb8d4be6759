package feishu_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/feishu"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
)

var testNow = time.Unix(1700000000, 0)

func newVerifier(t *testing.T) *feishu.Verifier {
	t.Helper()
	v, err := feishu.NewVerifier(feishu.VerifierConfig{
		VerificationToken: testToken,
		EncryptKey:        testEncryptKey,
		AppID:             "cli_9f5343c580712544",
	}, func() time.Time { return testNow })
	require.NoError(t, err)
	return v
}

func TestVerifierConfigValidate(t *testing.T) {
	err := feishu.VerifierConfig{}.Validate()
	require.ErrorIs(t, err, feishu.ErrNotConfigured)
	require.Contains(t, err.Error(), "verification token")
	require.Contains(t, err.Error(), "encrypt key")
	require.Equal(t, http.StatusNotFound, feishu.Status(err))

	_, err = feishu.NewVerifier(feishu.VerifierConfig{VerificationToken: "t"}, nil)
	require.ErrorIs(t, err, feishu.ErrNotConfigured)
	require.NoError(t, feishu.VerifierConfig{VerificationToken: "t", EncryptKey: "k"}.Validate())
}

func signed(body []byte, at time.Time) http.Header {
	return fakefeishu.SignedHeaders(testEncryptKey, body, at, "nonce-1")
}

func TestVerifierOpenEvent(t *testing.T) {
	v := newVerifier(t)
	plain := readFixture(t, "im.message.receive_v1.group_mention.json")
	body := fakefeishu.EncryptedBody(testEncryptKey, plain)

	in, err := v.Open(signed(body, testNow), body)
	require.NoError(t, err)
	require.Equal(t, plain, in.Plain)
	require.Empty(t, in.Challenge)
	require.Equal(t, "5e3702a84e847582be8db7fb73283c02", in.EventID)
	require.Equal(t, feishu.EventMessageReceived, in.EventType)
}

func TestVerifierSignatureAndTimestamp(t *testing.T) {
	v := newVerifier(t)
	body := fakefeishu.EncryptedBody(testEncryptKey, readFixture(t, "im.message.receive_v1.p2p.json"))
	tests := []struct {
		name    string
		headers func() http.Header
		body    []byte
		want    error
	}{
		{"good", func() http.Header { return signed(body, testNow) }, body, nil},
		{"good at edge of window", func() http.Header { return signed(body, testNow.Add(-5*time.Minute)) }, body, nil},
		{"stale", func() http.Header { return signed(body, testNow.Add(-5*time.Minute-time.Second)) }, body, feishu.ErrStaleTimestamp},
		{"future", func() http.Header { return signed(body, testNow.Add(6*time.Minute)) }, body, feishu.ErrStaleTimestamp},
		{"timestamp not a number", func() http.Header {
			h := http.Header{}
			h.Set(feishu.HeaderTimestamp, "soon")
			h.Set(feishu.HeaderNonce, "n")
			h.Set(feishu.HeaderSignature, feishu.Signature("soon", "n", testEncryptKey, body))
			return h
		}, body, feishu.ErrStaleTimestamp},
		{"wrong signature", func() http.Header {
			h := signed(body, testNow)
			h.Set(feishu.HeaderSignature, feishu.Signature("1", "2", testEncryptKey, body))
			return h
		}, body, feishu.ErrBadSignature},
		{"signature not hex", func() http.Header {
			h := signed(body, testNow)
			h.Set(feishu.HeaderSignature, "zz")
			return h
		}, body, feishu.ErrBadSignature},
		{"signed with another key", func() http.Header {
			return fakefeishu.SignedHeaders("other", body, testNow, "n")
		}, body, feishu.ErrBadSignature},
		{"timestamp changed after signing", func() http.Header {
			h := signed(body, testNow)
			h.Set(feishu.HeaderTimestamp, strconv.FormatInt(testNow.Unix()+1, 10))
			return h
		}, body, feishu.ErrBadSignature},
		{"body changed after signing", func() http.Header { return signed(body, testNow) },
			append(append([]byte(nil), body...), ' '), feishu.ErrBadSignature},
		{"unsigned event", func() http.Header { return http.Header{} }, body, feishu.ErrBadSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.Open(tt.headers(), tt.body)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.want)
			require.Equal(t, http.StatusUnauthorized, feishu.Status(err))
		})
	}
}

func TestVerifierToken(t *testing.T) {
	v := newVerifier(t)
	withToken := func(token, appID string) []byte {
		var ev map[string]any
		require.NoError(t, json.Unmarshal(readFixture(t, "im.message.receive_v1.p2p.json"), &ev))
		h := ev["header"].(map[string]any)
		h["token"], h["app_id"] = token, appID
		b, err := json.Marshal(ev)
		require.NoError(t, err)
		return b
	}
	tests := []struct {
		name  string
		plain []byte
		want  error
	}{
		{"good", withToken(testToken, "cli_9f5343c580712544"), nil},
		{"bad token", withToken("rvaYgkND1GOiu5MM0E1rncYC6PLtF7JX", "cli_9f5343c580712544"), feishu.ErrBadToken},
		{"empty token", withToken("", "cli_9f5343c580712544"), feishu.ErrBadToken},
		{"other app", withToken(testToken, "cli_other"), feishu.ErrWrongApp},
		{"schema 1.0 with bad token", []byte(`{"uuid":"x","token":"nope","type":"event_callback","event":{}}`), feishu.ErrBadToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := fakefeishu.EncryptedBody(testEncryptKey, tt.plain)
			_, err := v.Open(signed(body, testNow), body)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.want)
			require.Equal(t, http.StatusForbidden, feishu.Status(err))
		})
	}
}

func TestVerifierChallenge(t *testing.T) {
	v := newVerifier(t)
	plain := readFixture(t, "url_verification.json")
	badToken := []byte(`{"challenge":"abc","token":"wrong","type":"url_verification"}`)
	enc := fakefeishu.EncryptedBody(testEncryptKey, plain)
	encBad := fakefeishu.EncryptedBody(testEncryptKey, badToken)

	tests := []struct {
		name    string
		headers http.Header
		body    []byte
		want    error
	}{
		{"encrypted, unsigned", http.Header{}, enc, nil},
		{"encrypted, signed", signed(enc, testNow), enc, nil},
		{"plain", http.Header{}, plain, nil},
		{"plain, bad token", http.Header{}, badToken, feishu.ErrBadToken},
		// Unsigned requests get one answer for every failure: no padding oracle.
		{"encrypted unsigned, bad token", http.Header{}, fakefeishu.EncryptedBody(testEncryptKey, badToken), feishu.ErrBadSignature},
		{"encrypted unsigned, wrong key", http.Header{}, fakefeishu.EncryptedBody("other", plain), feishu.ErrBadSignature},
		{"encrypted signed, bad token", signed(encBad, testNow), encBad, feishu.ErrBadToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := v.Open(tt.headers, tt.body)
			if tt.want != nil {
				require.ErrorIs(t, err, tt.want)
				return
			}
			require.NoError(t, err)
			require.Equal(t, "ajls384kdjx98XX", in.Challenge)
			require.Nil(t, in.Plain)
			require.JSONEq(t, `{"challenge":"ajls384kdjx98XX"}`, string(feishu.ChallengeResponse(in.Challenge)))
		})
	}
}

func TestVerifierMalformed(t *testing.T) {
	v := newVerifier(t)
	notJSON := []byte(`{"encrypt":"` + fakefeishu.Encrypt(testEncryptKey, []byte("not json")) + `"}`)
	badCipher := []byte(`{"encrypt":"AAAA"}`)
	tests := []struct {
		name string
		body []byte
		want error
	}{
		{"body not JSON", []byte("hello"), feishu.ErrMalformed},
		{"plain event", readFixture(t, "im.message.receive_v1.p2p.json"), feishu.ErrNotEncrypted},
		{"decrypted not JSON", notJSON, feishu.ErrMalformed},
		{"bad ciphertext", badCipher, feishu.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.Open(signed(tt.body, testNow), tt.body)
			require.ErrorIs(t, err, tt.want)
			require.Equal(t, http.StatusBadRequest, feishu.Status(err))
		})
	}
	require.Equal(t, http.StatusInternalServerError, feishu.Status(errors.New("other")))
}
