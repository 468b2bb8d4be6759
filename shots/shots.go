// Package shots keeps the screenshots the Executor's screenshot tool
// takes and serves them, without authentication, at
// <SUPERAGENT_PUBLIC_URL>/shots/<token>.png: the token is 128 random bits,
// so the address is unguessable, and it never changes, so a pull request
// description can show the image (GitHub fetches it through its image
// proxy, which sends no credentials). Which shots a pull request
// description links to is how pr_update tells the service's own
// screenshots from any two image links.
package shots

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"image/png"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
)

// Bounds of what is kept.
const (
	// MaxBytes caps one screenshot.
	MaxBytes = 5 << 20
	// MaxPerTicket caps how many one Ticket keeps.
	MaxPerTicket = 40
	// maxLabel caps a label's characters.
	maxLabel = 200
)

// ErrNotFound is returned for a token no shot has.
var ErrNotFound = errors.New("no such screenshot")

// Shot is one kept screenshot, without its bytes.
type Shot struct {
	Token    string
	TicketID int64
	// Label says what it shows: "before" or "after" and the page.
	Label string
	URL   string
	Width int
	// Height in pixels.
	Height         int
	FeishuImageKey string
	CreatedAt      time.Time
}

// Path is where the service serves the shot: /shots/<token>.png.
func Path(token string) string { return "/shots/" + token + ".png" }

// URL is the shot's address under publicURL.
func URL(publicURL, token string) string {
	return strings.TrimRight(publicURL, "/") + Path(token)
}

// Config configures a Store. The zero value of each field is its
// documented default.
type Config struct {
	// Now tells the time. Default: time.Now.
	Now func() time.Time
	// Random is the source of the tokens. Default: crypto/rand.
	Random io.Reader
}

// Store keeps screenshots in the database.
type Store struct {
	cfg Config
	db  *db.DB
}

// New returns a Store on d.
func New(cfg Config, d *db.DB) *Store {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Random == nil {
		cfg.Random = rand.Reader
	}
	return &Store{cfg: cfg, db: d}
}

// TooManyError refuses a shot past MaxPerTicket.
type TooManyError struct{ TicketID int64 }

func (e *TooManyError) Error() string {
	return fmt.Sprintf("ticket %d keeps %d screenshots already, the most it may", e.TicketID, MaxPerTicket)
}

// Put keeps data, which must be a PNG of at most MaxBytes, as a shot of
// the Ticket, under a new token.
func (s *Store) Put(ctx context.Context, ticketID int64, label, url string, data []byte) (Shot, error) {
	if len(data) > MaxBytes {
		return Shot{}, fmt.Errorf("keeping a screenshot of %d bytes: over the limit of %d", len(data), MaxBytes)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return Shot{}, fmt.Errorf("keeping a screenshot: not a PNG: %w", err)
	}
	var raw [16]byte
	if _, err := io.ReadFull(s.cfg.Random, raw[:]); err != nil {
		return Shot{}, fmt.Errorf("making a screenshot token: %w", err)
	}
	sh := Shot{Token: hex.EncodeToString(raw[:]), TicketID: ticketID, Label: clip(label, maxLabel), URL: clip(url, 2000),
		Width: cfg.Width, Height: cfg.Height, CreatedAt: s.cfg.Now().UTC()}
	err = s.db.InTx(ctx, func(tx *db.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM screenshots WHERE ticket_id = $1`, ticketID).Scan(&n); err != nil {
			return err
		}
		if n >= MaxPerTicket {
			return &TooManyError{TicketID: ticketID}
		}
		_, err := tx.Exec(ctx, `INSERT INTO screenshots (token, ticket_id, label, url, width, height, png, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, sh.Token, ticketID, sh.Label, sh.URL, sh.Width, sh.Height, data, sh.CreatedAt)
		return err
	})
	if tm := (*TooManyError)(nil); errors.As(err, &tm) {
		return Shot{}, err
	}
	if err != nil {
		return Shot{}, fmt.Errorf("keeping a screenshot of ticket %d: %w", ticketID, err)
	}
	return sh, nil
}

func clip(s string, n int) string {
	s = strings.ToValidUTF8(strings.TrimSpace(s), "")
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}

// PNG returns the bytes of the shot token names.
func (s *Store) PNG(ctx context.Context, token string) ([]byte, error) {
	if !validToken(token) {
		return nil, ErrNotFound
	}
	var data []byte
	err := s.db.QueryRow(ctx, `SELECT png FROM screenshots WHERE token = $1`, token).Scan(&data)
	if errors.Is(err, db.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("reading screenshot: %w", err)
	}
	return data, nil
}

// OfTicket lists the Ticket's shots, oldest first.
func (s *Store) OfTicket(ctx context.Context, ticketID int64) ([]Shot, error) {
	rows, err := s.db.Query(ctx, `SELECT token, label, url, width, height, feishu_image_key, created_at
FROM screenshots WHERE ticket_id = $1 ORDER BY created_at, token`, ticketID)
	if err != nil {
		return nil, fmt.Errorf("listing the screenshots of ticket %d: %w", ticketID, err)
	}
	defer rows.Close()
	var out []Shot
	for rows.Next() {
		sh := Shot{TicketID: ticketID}
		if err := rows.Scan(&sh.Token, &sh.Label, &sh.URL, &sh.Width, &sh.Height, &sh.FeishuImageKey, &sh.CreatedAt); err != nil {
			return nil, fmt.Errorf("listing the screenshots of ticket %d: %w", ticketID, err)
		}
		out = append(out, sh)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing the screenshots of ticket %d: %w", ticketID, err)
	}
	return out, nil
}

// SetFeishuImageKey records the key Feishu gave the shot's image.
func (s *Store) SetFeishuImageKey(ctx context.Context, token, key string) error {
	if _, err := s.db.Exec(ctx, `UPDATE screenshots SET feishu_image_key = $2 WHERE token = $1`, token, key); err != nil {
		return fmt.Errorf("recording the Feishu image of screenshot: %w", err)
	}
	return nil
}

func validToken(t string) bool {
	if len(t) != 32 {
		return false
	}
	_, err := hex.DecodeString(t)
	return err == nil && strings.ToLower(t) == t
}

// image links: markdown ![alt](url "title") and HTML <img src="url">.
var (
	markdownImage = regexp.MustCompile(`!\[[^\]]*\]\(\s*<?([^\s)>]+)>?(?:\s+"[^"]*")?\s*\)`)
	htmlImage     = regexp.MustCompile(`(?i)<img\s[^>]*?\bsrc\s*=\s*["']?([^"'\s>]+)`)
)

// Linked returns the tokens of the images in text (markdown or HTML)
// whose address is one of this service's shots under publicURL, each
// once, in order.
func Linked(text, publicURL string) []string {
	prefix := strings.TrimRight(publicURL, "/") + "/shots/"
	var out []string
	seen := map[string]bool{}
	for _, re := range []*regexp.Regexp{markdownImage, htmlImage} {
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			rest, ok := strings.CutPrefix(m[1], prefix)
			if !ok {
				continue
			}
			token, ok := strings.CutSuffix(rest, ".png")
			if ok && validToken(token) && !seen[token] {
				seen[token] = true
				out = append(out, token)
			}
		}
	}
	return out
}
