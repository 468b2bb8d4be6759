package feishu

import (
	"errors"
	"net/http"
)

// Errors returned by Verifier.Open and Parse. Each is wrapped with detail;
// compare with errors.Is, or map to an HTTP status with Status.
var (
	// ErrNotConfigured means the verification token or the Encrypt Key is
	// missing, so requests cannot be authenticated: the endpoint must stay off.
	ErrNotConfigured = errors.New("feishu webhook not configured")
	// ErrMalformed means the request or event could not be read.
	ErrMalformed = errors.New("malformed feishu request")
	// ErrNotEncrypted means an event arrived in plain text although an Encrypt
	// Key is required: the Encrypt Key is probably not set in the Feishu console.
	ErrNotEncrypted = errors.New("feishu event is not encrypted")
	// ErrBadSignature means X-Lark-Signature is missing or wrong.
	ErrBadSignature = errors.New("bad feishu signature")
	// ErrStaleTimestamp means X-Lark-Request-Timestamp is outside the window.
	ErrStaleTimestamp = errors.New("feishu request timestamp outside the allowed window")
	// ErrBadToken means the verification token in the event does not match.
	ErrBadToken = errors.New("bad feishu verification token")
	// ErrWrongApp means the event was addressed to another app id.
	ErrWrongApp = errors.New("feishu event for another app")
)

// Status maps an error from Verifier.Open or Parse to the HTTP status the
// webhook handler should answer with: 404 when the endpoint is not configured,
// 401 for signature and timestamp failures, 403 for a wrong token or app,
// 400 for anything unreadable, and 500 for errors this package did not produce.
func Status(err error) int {
	switch {
	case err == nil:
		return http.StatusOK
	case errors.Is(err, ErrNotConfigured):
		return http.StatusNotFound
	case errors.Is(err, ErrBadSignature), errors.Is(err, ErrStaleTimestamp):
		return http.StatusUnauthorized
	case errors.Is(err, ErrBadToken), errors.Is(err, ErrWrongApp):
		return http.StatusForbidden
	case errors.Is(err, ErrMalformed), errors.Is(err, ErrNotEncrypted):
		return http.StatusBadRequest
	default:
		return http.StatusInternalServerError
	}
}
