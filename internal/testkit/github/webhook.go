package github

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// SignWebhook returns the X-Hub-Signature-256 value GitHub sends with a
// webhook delivery of body under secret.
func SignWebhook(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}
