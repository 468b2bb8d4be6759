package setup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// DefaultFeishuBaseURL is Feishu's Open API root; Lark's is
// https://open.larksuite.com.
const DefaultFeishuBaseURL = "https://open.feishu.cn"

// FeishuConfig names the app to check. The zero value of each optional field
// is the documented default.
type FeishuConfig struct {
	// AppID and AppSecret are the app's credentials
	// (SUPERAGENT_FEISHU_APP_ID, SUPERAGENT_FEISHU_APP_SECRET). Required.
	AppID     string
	AppSecret string
	// BaseURL is the Open API root (SUPERAGENT_FEISHU_BASE_URL). Default
	// DefaultFeishuBaseURL.
	BaseURL string
	// HTTPClient carries the two requests. Default: a client with a 15
	// second timeout.
	HTTPClient *http.Client
}

// FeishuBot is the app's bot as Feishu reports it.
type FeishuBot struct {
	Name   string
	OpenID string
}

// FeishuError is a failed check: which step failed, what Feishu said, and
// what to change. Its message never contains the app secret or the token.
type FeishuError struct {
	Step string // "tenant token" or "bot info"
	// Status and Code are Feishu's HTTP status and error code (0 when the
	// request did not get that far).
	Status int
	Code   int
	Msg    string
	Fix    string
	Err    error // a transport or decoding failure, if that is what happened
}

func (e *FeishuError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "feishu %s: ", e.Step)
	switch {
	case e.Err != nil:
		b.WriteString(e.Err.Error())
	default:
		fmt.Fprintf(&b, "HTTP %d, code %d: %s", e.Status, e.Code, e.Msg)
	}
	return b.String()
}

func (e *FeishuError) Unwrap() error { return e.Err }

// CheckFeishu mints a tenant access token with the app's credentials
// (POST /open-apis/auth/v3/tenant_access_token/internal) and reads the bot's
// identity with it (GET /open-apis/bot/v3/info). A failure is a
// *FeishuError whose Fix says what to change.
func CheckFeishu(ctx context.Context, cfg FeishuConfig) (*FeishuBot, error) {
	var missing []string
	if cfg.AppID == "" {
		missing = append(missing, "SUPERAGENT_FEISHU_APP_ID")
	}
	if cfg.AppSecret == "" {
		missing = append(missing, "SUPERAGENT_FEISHU_APP_SECRET")
	}
	if len(missing) > 0 {
		return nil, &FeishuError{Step: "configuration", Err: fmt.Errorf("%s not set", strings.Join(missing, " and ")),
			Fix: "copy the App ID and App Secret from the app's Credentials & Basic Info page in the Feishu (or Lark) developer console"}
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base == "" {
		base = DefaultFeishuBaseURL
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 15 * time.Second}
	}

	body, _ := json.Marshal(map[string]string{"app_id": cfg.AppID, "app_secret": cfg.AppSecret})
	var tok struct {
		Code   int    `json:"code"`
		Msg    string `json:"msg"`
		Token  string `json:"tenant_access_token"`
		Expire int    `json:"expire"`
	}
	status, err := feishuCall(ctx, client, http.MethodPost, base+"/open-apis/auth/v3/tenant_access_token/internal", "", body, &tok)
	if err != nil {
		return nil, &FeishuError{Step: "tenant token", Status: status, Err: err, Fix: reachFix(base)}
	}
	if tok.Code != 0 || tok.Token == "" {
		return nil, &FeishuError{Step: "tenant token", Status: status, Code: tok.Code, Msg: tok.Msg, Fix: tokenFix(tok.Code, base)}
	}

	var info struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
		Bot  struct {
			AppName string `json:"app_name"`
			OpenID  string `json:"open_id"`
		} `json:"bot"`
	}
	status, err = feishuCall(ctx, client, http.MethodGet, base+"/open-apis/bot/v3/info", tok.Token, nil, &info)
	if err != nil {
		return nil, &FeishuError{Step: "bot info", Status: status, Err: err, Fix: reachFix(base)}
	}
	if info.Code != 0 || info.Bot.OpenID == "" {
		msg := info.Msg
		if info.Code == 0 {
			msg = "the answer names no bot"
		}
		return nil, &FeishuError{Step: "bot info", Status: status, Code: info.Code, Msg: msg,
			Fix: "enable the Bot capability under Features in the developer console, then publish a new version of the app so it takes effect"}
	}
	return &FeishuBot{Name: info.Bot.AppName, OpenID: info.Bot.OpenID}, nil
}

// feishuCall sends one request and decodes Feishu's JSON answer into out,
// whatever the HTTP status: Feishu reports failures in the body's code.
func feishuCall(ctx context.Context, client *http.Client, method, url, token string, body []byte, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("reading the answer: %w", err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return resp.StatusCode, fmt.Errorf("HTTP %d with a body that is not Feishu's JSON (is the base URL right?): %w", resp.StatusCode, err)
	}
	return resp.StatusCode, nil
}

func reachFix(base string) string {
	return fmt.Sprintf("check that this machine reaches %s; for Lark set SUPERAGENT_FEISHU_BASE_URL=https://open.larksuite.com", base)
}

// Feishu error codes for refused app credentials.
const (
	feishuInvalidParam     = 10003
	feishuAppSecretInvalid = 10014
)

func tokenFix(code int, base string) string {
	switch code {
	case feishuAppSecretInvalid:
		return "the App Secret does not match the App ID: copy SUPERAGENT_FEISHU_APP_SECRET again from Credentials & Basic Info (reset it there if it leaked)"
	case feishuInvalidParam:
		return "Feishu does not know this App ID: copy SUPERAGENT_FEISHU_APP_ID (cli_…) from Credentials & Basic Info; a Lark app also needs SUPERAGENT_FEISHU_BASE_URL=https://open.larksuite.com"
	}
	hint := "check SUPERAGENT_FEISHU_APP_ID and SUPERAGENT_FEISHU_APP_SECRET against Credentials & Basic Info in the developer console"
	if base == DefaultFeishuBaseURL {
		hint += "; a Lark app needs SUPERAGENT_FEISHU_BASE_URL=https://open.larksuite.com"
	}
	return hint
}

// FeishuSetup runs CheckFeishu and prints the outcome and next steps to out.
func FeishuSetup(ctx context.Context, cfg FeishuConfig, out io.Writer) error {
	bot, err := CheckFeishu(ctx, cfg)
	if err != nil {
		var fe *FeishuError
		if errors.As(err, &fe) && fe.Fix != "" {
			fmt.Fprintf(out, "Feishu credentials do not work: %v\nFix: %s\n", err, fe.Fix)
		} else {
			fmt.Fprintf(out, "Feishu credentials do not work: %v\n", err)
		}
		return err
	}
	fmt.Fprintf(out, "Feishu credentials work: the bot is %q (open_id %s).\n\n", bot.Name, bot.OpenID)
	fmt.Fprintf(out, "Next steps:\n")
	fmt.Fprintf(out, "  1. Give the app the scopes im:message, im:message:send_as_bot, im:message.group_at_msg:readonly,\n")
	fmt.Fprintf(out, "     im:message.p2p_msg:readonly, im:resource and im:chat:readonly.\n")
	fmt.Fprintf(out, "  2. Subscribe to im.message.receive_v1, im.chat.member.bot.added_v1, im.chat.member.bot.deleted_v1\n")
	fmt.Fprintf(out, "     and the card callback card.action.trigger (the status cards' and proposals' buttons); either by long\n")
	fmt.Fprintf(out, "     connection (SUPERAGENT_FEISHU_MODE=longconn)\n")
	fmt.Fprintf(out, "     or at https://<public host>/webhooks/feishu with an Encrypt Key (SUPERAGENT_FEISHU_ENCRYPT_KEY).\n")
	fmt.Fprintf(out, "  3. Publish a version of the app, then add the bot to the team's group chats.\n")
	return nil
}
