package feishu

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names Feishu signs requests with.
const (
	HeaderSignature = "X-Lark-Signature"
	HeaderTimestamp = "X-Lark-Request-Timestamp"
	HeaderNonce     = "X-Lark-Request-Nonce"
)

// MaxBodyBytes is a generous bound for a webhook body: wrap the request body
// in http.MaxBytesReader with it before reading. Feishu's largest events
// (150 KB text, encrypted and base64-encoded) stay well below.
const MaxBodyBytes = 1 << 20

// DefaultMaxSkew is the default window for X-Lark-Request-Timestamp.
const DefaultMaxSkew = 5 * time.Minute

// VerifierConfig configures the authentication of POST /webhooks/feishu.
type VerifierConfig struct {
	// VerificationToken is the app's Verification Token
	// (SUPERAGENT_FEISHU_VERIFICATION_TOKEN). Required.
	VerificationToken string
	// EncryptKey is the app's Encrypt Key (SUPERAGENT_FEISHU_ENCRYPT_KEY).
	// Required: without it Feishu neither encrypts nor signs events, and
	// anyone could post a forged one.
	EncryptKey string
	// AppID, when set, must equal header.app_id of every event.
	// Default: not checked.
	AppID string
	// MaxSkew is how far X-Lark-Request-Timestamp may be from now, in either
	// direction. Default DefaultMaxSkew (5 minutes).
	MaxSkew time.Duration
}

// Validate reports every setting missing for the webhook endpoint to be
// safe, wrapped in ErrNotConfigured. Callers keep the endpoint disabled (404)
// while it returns an error.
func (c VerifierConfig) Validate() error {
	var missing []string
	if c.VerificationToken == "" {
		missing = append(missing, "verification token (SUPERAGENT_FEISHU_VERIFICATION_TOKEN)")
	}
	if c.EncryptKey == "" {
		missing = append(missing, "encrypt key (SUPERAGENT_FEISHU_ENCRYPT_KEY)")
	}
	if c.MaxSkew < 0 {
		missing = append(missing, "a non-negative timestamp window")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: missing %s", ErrNotConfigured, strings.Join(missing, ", "))
	}
	return nil
}

// Verifier authenticates and decrypts requests to POST /webhooks/feishu.
// It is pure: no I/O, safe for concurrent use.
type Verifier struct {
	cfg VerifierConfig
	now func() time.Time
}

// NewVerifier returns a Verifier, or an error wrapping ErrNotConfigured when
// cfg is incomplete. now is the clock (time.Now in production).
func NewVerifier(cfg VerifierConfig, now func() time.Time) (*Verifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxSkew == 0 {
		cfg.MaxSkew = DefaultMaxSkew
	}
	if now == nil {
		now = time.Now
	}
	return &Verifier{cfg: cfg, now: now}, nil
}

// Inbound is an authenticated request.
type Inbound struct {
	// Challenge is set for a url_verification request: answer it with
	// ChallengeResponse(Challenge) and store nothing.
	Challenge string
	// Plain is the decrypted event JSON (schema 2.0), exactly the shape the
	// long connection delivers; store it and give it to Parse.
	Plain []byte
	// EventID and EventType come from the event header (empty for a challenge).
	EventID   string
	EventType string
}

// envelope is the part of a body needed to route and authenticate it.
type envelope struct {
	Encrypt   string `json:"encrypt"`
	Schema    string `json:"schema"`
	Type      string `json:"type"`
	Challenge string `json:"challenge"`
	Token     string `json:"token"`
	Header    *struct {
		EventID   string `json:"event_id"`
		EventType string `json:"event_type"`
		Token     string `json:"token"`
		AppID     string `json:"app_id"`
	} `json:"header"`
}

const typeURLVerification = "url_verification"

// Open authenticates a request from its headers and raw body and returns the
// decrypted event. Errors wrap the package's sentinel errors (see Status).
//
// Signed requests: the signature is checked in constant time over the raw
// body, then the timestamp window, then the body is decrypted and the
// verification token checked in constant time.
//
// Unsigned requests are accepted for url_verification only. Feishu's docs and
// its SDK treat the challenge as unsigned (the SDK skips the signature check
// for it), so requiring a signature would make the URL impossible to save in
// the console. Answering a challenge is safe without one: it stores nothing,
// reveals nothing but the challenge the caller sent, and still needs the
// verification token (inside the ciphertext when encrypted). Every other
// outcome of an unsigned request is the same ErrBadSignature, so the
// decryption step cannot serve as a padding oracle.
func (v *Verifier) Open(h http.Header, body []byte) (*Inbound, error) {
	var outer envelope
	if err := json.Unmarshal(body, &outer); err != nil {
		return nil, fmt.Errorf("%w: body is not JSON: %w", ErrMalformed, err)
	}
	signature := h.Get(HeaderSignature)
	if outer.Encrypt == "" {
		// A plain challenge comes when the URL is saved before the Encrypt Key
		// is set in the console; events in plain text are refused.
		if outer.Type == typeURLVerification {
			return v.challenge(outer)
		}
		return nil, fmt.Errorf("%w: set the Encrypt Key in the Feishu console", ErrNotEncrypted)
	}
	if signature == "" {
		in, err := v.openUnsigned(outer)
		if err != nil {
			return nil, fmt.Errorf("%w: missing %s", ErrBadSignature, HeaderSignature)
		}
		return in, nil
	}
	ts, nonce := h.Get(HeaderTimestamp), h.Get(HeaderNonce)
	if !validSignature(signature, ts, nonce, v.cfg.EncryptKey, body) {
		return nil, ErrBadSignature
	}
	if err := v.checkTimestamp(ts); err != nil {
		return nil, err
	}
	plain, err := Decrypt(outer.Encrypt, v.cfg.EncryptKey)
	if err != nil {
		return nil, fmt.Errorf("%w: decrypting: %w", ErrMalformed, err)
	}
	var inner envelope
	if err := json.Unmarshal(plain, &inner); err != nil {
		return nil, fmt.Errorf("%w: decrypted event is not JSON: %w", ErrMalformed, err)
	}
	if inner.Type == typeURLVerification {
		return v.challenge(inner)
	}
	return v.event(inner, plain)
}

func (v *Verifier) openUnsigned(outer envelope) (*Inbound, error) {
	plain, err := Decrypt(outer.Encrypt, v.cfg.EncryptKey)
	if err != nil {
		return nil, err
	}
	var inner envelope
	if err := json.Unmarshal(plain, &inner); err != nil {
		return nil, err
	}
	if inner.Type != typeURLVerification {
		return nil, errors.New("unsigned event")
	}
	return v.challenge(inner)
}

func (v *Verifier) challenge(e envelope) (*Inbound, error) {
	if !equalSecret(e.Token, v.cfg.VerificationToken) {
		return nil, fmt.Errorf("%w: in url_verification", ErrBadToken)
	}
	if e.Challenge == "" {
		return nil, fmt.Errorf("%w: url_verification without a challenge", ErrMalformed)
	}
	return &Inbound{Challenge: e.Challenge}, nil
}

func (v *Verifier) event(e envelope, plain []byte) (*Inbound, error) {
	if e.Header == nil {
		// Schema 1.0 events carry the token at the top level; Parse refuses
		// them, but the token is still checked first.
		if !equalSecret(e.Token, v.cfg.VerificationToken) {
			return nil, ErrBadToken
		}
		return &Inbound{Plain: plain}, nil
	}
	if !equalSecret(e.Header.Token, v.cfg.VerificationToken) {
		return nil, ErrBadToken
	}
	if v.cfg.AppID != "" && e.Header.AppID != v.cfg.AppID {
		return nil, fmt.Errorf("%w: %q", ErrWrongApp, e.Header.AppID)
	}
	return &Inbound{Plain: plain, EventID: e.Header.EventID, EventType: e.Header.EventType}, nil
}

func (v *Verifier) checkTimestamp(ts string) error {
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s %q is not a number", ErrStaleTimestamp, HeaderTimestamp, ts)
	}
	skew := v.now().Sub(time.Unix(sec, 0))
	if skew > v.cfg.MaxSkew || skew < -v.cfg.MaxSkew {
		return fmt.Errorf("%w: %s off by %s", ErrStaleTimestamp, HeaderTimestamp, skew.Round(time.Second))
	}
	return nil
}

// ChallengeResponse is the body answering a url_verification request
// (Content-Type application/json).
func ChallengeResponse(challenge string) []byte {
	b, _ := json.Marshal(map[string]string{"challenge": challenge})
	return b
}
