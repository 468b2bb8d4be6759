package webhooks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"mime"
	"net/http"

	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/internal/httpserver"
)

// feishuEvents are the Feishu event types ingestion processes.
var feishuEvents = map[string]bool{
	feishu.EventMessageReceived: true, feishu.EventCardAction: true,
	feishu.EventBotAdded: true, feishu.EventBotDeleted: true,
}

// receiveFeishu handles POST /webhooks/feishu: authenticate (signature,
// timestamp window, then decryption and the verification token), answer a
// challenge, or store the event and its job and answer at once.
func (s *Service) receiveFeishu(w http.ResponseWriter, r *http.Request) error {
	if s.lark == nil {
		return httpserver.Errorf(http.StatusNotFound, "Feishu webhooks are not configured")
	}
	if err := checkFeishuHeaders(r.Header, s.cfg.Feishu.MaxBody, r.ContentLength); err != nil {
		s.metrics.count("feishu", "", "rejected")
		return err
	}
	body, err := readBody(w, r, s.cfg.Feishu.MaxBody)
	if err != nil {
		s.metrics.count("feishu", "", "rejected")
		return err
	}
	in, err := s.lark.Open(r.Header, body)
	if err != nil {
		s.metrics.count("feishu", "", "rejected")
		if setting := feishuSetting(err); setting != "" {
			s.refused(&s.feishuRefusals, r, setting, err.Error())
		}
		status := feishu.Status(err)
		return &httpserver.Error{Status: status, Message: http.StatusText(status), Err: err}
	}
	w.Header().Set("Content-Type", "application/json")
	if in.Challenge != "" {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(feishu.ChallengeResponse(in.Challenge))
		return nil
	}
	if _, err := s.storeFeishu(r.Context(), in.Plain); err != nil {
		return err
	}
	// Card actions are callbacks: {} acknowledges without changing the
	// card; a command button is answered with a toast.
	httpserver.WriteJSON(w, http.StatusOK, s.FeishuCardAnswer(r.Context(), in.Plain))
	return nil
}

// CardAnswerer answers a card action already stored: the toast the person
// who pressed the button sees (see orchestrator.AnswerCardAction).
type CardAnswerer func(ctx context.Context, a *feishu.CardAction) feishu.CardActionResponse

// AnswerCards sets how stored card actions are answered, on the webhook
// and the long connection alike. Call it before serving. Default: {}.
func (s *Service) AnswerCards(f CardAnswerer) { s.cardAnswer = f }

// FeishuCardAnswer is the body answering a stored event: for a card
// action, the CardAnswerer's; {} for anything else. It is the long
// connection's card answer too.
func (s *Service) FeishuCardAnswer(ctx context.Context, plain []byte) feishu.CardActionResponse {
	if s.cardAnswer == nil {
		return feishu.CardActionResponse{}
	}
	ev, err := feishu.Parse(plain, feishu.ParseOptions{})
	if err != nil || ev.CardAction == nil {
		return feishu.CardActionResponse{}
	}
	return s.cardAnswer(ctx, ev.CardAction)
}

// checkFeishuHeaders refuses, from the headers alone, what cannot be a
// Feishu request. A signature is optional here (Feishu leaves the
// url_verification challenge unsigned; the verifier decides), but when sent
// it must be whole: hex SHA-256 with its timestamp and nonce.
func checkFeishuHeaders(h http.Header, maxBody, length int64) error {
	if length > maxBody {
		return httpserver.Errorf(http.StatusRequestEntityTooLarge, "request body too large")
	}
	if mt, _, err := mime.ParseMediaType(h.Get("Content-Type")); err != nil || mt != "application/json" {
		return httpserver.Errorf(http.StatusUnsupportedMediaType, "content type must be application/json")
	}
	if sig := h.Get(feishu.HeaderSignature); sig != "" {
		if len(sig) != 2*sha256.Size || !token(sig, 2*sha256.Size, isHexByte) ||
			!token(h.Get(feishu.HeaderTimestamp), 20, isDigit) || !token(h.Get(feishu.HeaderNonce), 200, isVisibleByte) {
			return httpserver.Errorf(http.StatusUnauthorized, "malformed %s, %s or %s", feishu.HeaderSignature, feishu.HeaderTimestamp, feishu.HeaderNonce)
		}
	}
	return nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// FeishuEvent stores one authenticated, decrypted Feishu event (schema 2.0
// JSON) and enqueues its processing, deduplicated like the webhook path.
// It is the long connection's feishu.EventHandler.
func (s *Service) FeishuEvent(ctx context.Context, plain []byte) error {
	_, err := s.storeFeishu(ctx, plain)
	return err
}

// storeFeishu records an event under its dedupe key: message id for
// received messages, event id otherwise. An event that cannot be read is
// recorded failed (under a hash of its bytes when it has no id).
func (s *Service) storeFeishu(ctx context.Context, plain []byte) (dup bool, err error) {
	d := Delivery{Source: "feishu", Headers: map[string]string{}, Body: plain, ReceivedAt: s.now(), State: DeliveryReceived}
	ev, perr := feishu.Parse(plain, feishu.ParseOptions{})
	switch {
	case perr != nil:
		sum := sha256.Sum256(plain)
		d.DedupeKey, d.Event = "unreadable:"+hex.EncodeToString(sum[:16]), "unreadable"
		d.State, d.Error = DeliveryFailed, perr.Error()
	case !feishuEvents[ev.Type]:
		d.DedupeKey, d.Event = ev.DedupeKey(), ev.Type
		d.State, d.Error, d.Body = DeliveryIgnored, "event "+ev.Type+" is not processed", nil
	default:
		d.DedupeKey, d.Event = ev.DedupeKey(), ev.Type
	}
	if len(d.Event) > 100 {
		d.Event = d.Event[:100]
	}
	stored, err := s.record(ctx, d, nil)
	if err != nil {
		return false, fmt.Errorf("storing feishu event: %w", err)
	}
	dup = stored.dup
	outcome := map[string]string{DeliveryReceived: "accepted", DeliveryFailed: "malformed", DeliveryIgnored: "ignored"}[d.State]
	if dup {
		outcome = "duplicate"
	}
	s.metrics.count("feishu", d.Event, outcome)
	return dup, nil
}
