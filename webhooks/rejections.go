package webhooks

import (
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/superagent-dev/superagent/internal/feishu"
)

// rejectionEvery is how often one endpoint logs the requests it refused
// for their signature or token: a wrong secret refuses every delivery,
// and one line a minute, with a count, says so as well as a thousand.
const rejectionEvery = time.Minute

// rejections logs, at most once per rejectionEvery, that an endpoint
// refused a request for its signature or token, naming the setting to
// check: the commonest setup mistake, and otherwise silent.
type rejections struct {
	endpoint string
	mu       sync.Mutex
	last     time.Time
	// count is the requests refused since the last line.
	count int
}

// refused counts one refused request and logs it when the endpoint has
// not logged for rejectionEvery.
func (s *Service) refused(rj *rejections, r *http.Request, setting, reason string) {
	now := s.now()
	rj.mu.Lock()
	rj.count++
	if !rj.last.IsZero() && now.Sub(rj.last) < rejectionEvery {
		rj.mu.Unlock()
		return
	}
	n := rj.count
	rj.last, rj.count = now, 0
	rj.mu.Unlock()
	attrs := []any{"endpoint", rj.endpoint, "setting", setting, "reason", reason, "refused", n, "per", rejectionEvery.String(), "remote", r.RemoteAddr}
	if guid := r.Header.Get("X-GitHub-Delivery"); guid != "" {
		attrs = append(attrs, "event", r.Header.Get("X-GitHub-Event"), "delivery_guid", guid)
	}
	s.logger.Warn("webhook request refused; check "+setting, attrs...)
}

// feishuSetting names the setting a Feishu refusal points at; "" for a
// refusal that is no setup mistake (a malformed request).
func feishuSetting(err error) string {
	switch {
	case errors.Is(err, feishu.ErrBadSignature), errors.Is(err, feishu.ErrNotEncrypted):
		return "SUPERAGENT_FEISHU_ENCRYPT_KEY"
	case errors.Is(err, feishu.ErrBadToken):
		return "SUPERAGENT_FEISHU_VERIFICATION_TOKEN"
	case errors.Is(err, feishu.ErrWrongApp):
		return "SUPERAGENT_FEISHU_APP_ID"
	case errors.Is(err, feishu.ErrStaleTimestamp):
		return "this machine's clock"
	}
	return ""
}
