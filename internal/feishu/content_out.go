package feishu

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Size limits of the content field, as Feishu documents them.
const (
	MaxTextBytes = 150 * 1024 // text messages
	MaxCardBytes = 30 * 1024  // interactive cards and rich text (post)
)

// ErrTooLarge means content exceeds Feishu's limit. Nothing is cut silently:
// the caller decides whether to split, shorten or attach.
var ErrTooLarge = errors.New("feishu message content too large")

// Content is a message body ready to send: the msg_type and the content JSON.
// Build it with Text, Post or Card.
type Content struct {
	MsgType string
	JSON    string
}

var openIDPattern = regexp.MustCompile(`^ou_[A-Za-z0-9_-]{1,64}$`)

// escaper neutralises markup in untrusted text. Feishu reads "<at …></at>"
// in text messages (and in card markdown) as a mention, so "<at id=all></at>"
// from a user or a model would ping a whole group; & goes first so an
// existing entity is shown literally rather than decoded.
var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// Escape makes untrusted text safe to place in a text message or in card
// markdown: it cannot form tags such as <at id=all></at>.
func Escape(s string) string { return escaper.Replace(s) }

// Text builds a text message from untrusted text, escaped, preceded by
// mentions of the given open_ids (the only way this package emits <at>).
func Text(untrusted string, mentionOpenIDs ...string) (Content, error) {
	var b strings.Builder
	for _, id := range mentionOpenIDs {
		if !openIDPattern.MatchString(id) {
			return Content{}, fmt.Errorf("building text message: %q is not an open_id", id)
		}
		b.WriteString(`<at user_id="` + id + `"></at> `)
	}
	b.WriteString(Escape(untrusted))
	// json.Marshal escapes quotes and control characters; the SDK's text
	// builder concatenates strings and would produce invalid JSON.
	return build("text", map[string]string{"text": b.String()}, MaxTextBytes)
}

// Post builds a rich-text message: a title and paragraphs of plain text.
// Post text elements are shown literally, so no escaping is needed.
func Post(title string, paragraphs ...string) (Content, error) {
	type el struct {
		Tag  string `json:"tag"`
		Text string `json:"text"`
	}
	body := struct {
		Title   string `json:"title"`
		Content [][]el `json:"content"`
	}{Title: title, Content: [][]el{}}
	for _, p := range paragraphs {
		body.Content = append(body.Content, []el{{Tag: "text", Text: p}})
	}
	return build("post", map[string]any{"zh_cn": body}, MaxCardBytes)
}

// Card builds an interactive card from any JSON-marshalable value (a card
// JSON object). Escape untrusted text placed in markdown elements.
func Card(card any) (Content, error) {
	return build("interactive", card, MaxCardBytes)
}

func build(msgType string, v any, limit int) (Content, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Content{}, fmt.Errorf("encoding %s content: %w", msgType, err)
	}
	if len(b) > limit {
		return Content{}, fmt.Errorf("%w: %s content is %d bytes, limit %d", ErrTooLarge, msgType, len(b), limit)
	}
	return Content{MsgType: msgType, JSON: string(b)}, nil
}

// check validates content built elsewhere (a zero or hand-made Content).
func (c Content) check() error {
	limit := MaxCardBytes
	switch c.MsgType {
	case "":
		return errors.New("content without msg_type")
	case "text":
		limit = MaxTextBytes
	}
	if !json.Valid([]byte(c.JSON)) {
		return fmt.Errorf("%s content is not JSON", c.MsgType)
	}
	if len(c.JSON) > limit {
		return fmt.Errorf("%w: %s content is %d bytes, limit %d", ErrTooLarge, c.MsgType, len(c.JSON), limit)
	}
	return nil
}
