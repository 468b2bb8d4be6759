package tickets

import (
	"context"
	"fmt"
	"strings"

	"github.com/superagent-dev/superagent/internal/bodycodec"
	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/feishu"
)

// FeishuMessageID finds the Feishu message a card was made from: a card
// action's card message, or the message in the stored delivery; "" when
// there is none.
func FeishuMessageID(ctx context.Context, q db.Querier, c Card) (string, error) {
	if c.Kind == "card_action" {
		for _, r := range c.References {
			if id, ok := strings.CutPrefix(r.Ref, "feishu:message/"); ok {
				return id, nil
			}
		}
	}
	if c.DeliveryID == 0 {
		return "", nil
	}
	var stored []byte
	var encoding string
	if err := q.QueryRow(ctx, `SELECT body, body_encoding FROM deliveries WHERE id = $1`, c.DeliveryID).Scan(&stored, &encoding); err != nil {
		return "", fmt.Errorf("reading delivery %d of card %d: %w", c.DeliveryID, c.ID, err)
	}
	body, err := bodycodec.Unpack(stored, encoding)
	if err != nil {
		return "", fmt.Errorf("reading delivery %d of card %d: %w", c.DeliveryID, c.ID, err)
	}
	ev, err := feishu.Parse(body, feishu.ParseOptions{})
	if err != nil || ev.Message == nil {
		return "", nil //nolint:nilerr // an event that is not a readable message has no message to answer
	}
	return ev.Message.ID, nil
}
