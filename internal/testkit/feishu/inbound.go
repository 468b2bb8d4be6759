// Package feishu is a fake of Feishu (Lark) for tests: an httptest server
// speaking the Open API's wire format (token, messages, reactions, bot info)
// and the long connection's, plus helpers that encrypt and sign an inbound
// event exactly as Feishu posts it to a webhook.
//
// The encryption here is written independently of internal/feishu so tests
// of one check the other.
package feishu

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// Encrypt returns what Feishu puts in {"encrypt": …}: base64 of a random
// 16-byte IV followed by the AES-256-CBC ciphertext of plain (PKCS#7
// padded), keyed by SHA-256 of encryptKey.
func Encrypt(encryptKey string, plain []byte) string {
	iv := make([]byte, aes.BlockSize)
	_, _ = rand.Read(iv)
	return EncryptWithIV(encryptKey, iv, plain)
}

// EncryptWithIV is Encrypt with a chosen IV, for fixed test vectors.
func EncryptWithIV(encryptKey string, iv, plain []byte) string {
	key := sha256.Sum256([]byte(encryptKey))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		panic(err) // a 32-byte key is always valid
	}
	pad := aes.BlockSize - len(plain)%aes.BlockSize
	buf := append(append([]byte(nil), plain...), bytes.Repeat([]byte{byte(pad)}, pad)...)
	out := make([]byte, aes.BlockSize+len(buf))
	copy(out, iv[:aes.BlockSize])
	cipher.NewCBCEncrypter(block, out[:aes.BlockSize]).CryptBlocks(out[aes.BlockSize:], buf)
	return base64.StdEncoding.EncodeToString(out)
}

// EncryptedBody returns the webhook body {"encrypt":"…"} for plain.
func EncryptedBody(encryptKey string, plain []byte) []byte {
	b, _ := json.Marshal(map[string]string{"encrypt": Encrypt(encryptKey, plain)})
	return b
}

// Sign returns X-Lark-Signature for a body.
func Sign(timestamp, nonce, encryptKey string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(timestamp + nonce + encryptKey))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// SignedHeaders returns the headers Feishu sends with body at time at.
func SignedHeaders(encryptKey string, body []byte, at time.Time, nonce string) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	h := http.Header{}
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("User-Agent", "Mozilla/5.0 (compatible; Feishu-Webhook)")
	h.Set("X-Lark-Request-Timestamp", ts)
	h.Set("X-Lark-Request-Nonce", nonce)
	h.Set("X-Lark-Signature", Sign(ts, nonce, encryptKey, body))
	return h
}

// EventRequest builds POST url carrying plain (a schema 2.0 event JSON, as
// in the fixtures) encrypted and signed with encryptKey at time at.
func EventRequest(t testing.TB, url, encryptKey string, plain []byte, at time.Time) *http.Request {
	t.Helper()
	body := EncryptedBody(encryptKey, plain)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatalf("building feishu event request: %v", err)
	}
	req.Header = SignedHeaders(encryptKey, body, at, "nonce-"+strconv.FormatInt(at.UnixNano(), 36))
	return req
}
