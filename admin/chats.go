package admin

import (
	"context"
	"net/http"
	"strings"

	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/webhooks"
)

// FeishuChats lists the Feishu chats the service knows and opts one in to
// proactive admission, or out (webhooks.Service).
type FeishuChats interface {
	FeishuChats(ctx context.Context) ([]webhooks.FeishuChat, error)
	SetProactive(ctx context.Context, chatID string, on bool, by string) (webhooks.FeishuChat, error)
	SetChatRepos(ctx context.Context, chatID string, repos []string, by string) (webhooks.FeishuChat, error)
}

// actionChatRepos records the repositories a chat opens being set.
const actionChatRepos = "feishu_chat_repos"

// actionProactive records a chat opted in to proactive admission or out.
const actionProactive = "feishu_chat_proactive"

// getChats shows the known Feishu chats: name, id, whether unaddressed
// messages in them are candidates for the policy's propose and auto rules,
// and the last message seen, each with a toggle.
func (a *Admin) getChats(w http.ResponseWriter, r *http.Request) error {
	if a.deps.Chats == nil {
		return a.render(w, r, http.StatusNotFound, "message.html", pageData{Title: "Feishu chats", Nav: "chats",
			Data: message{Heading: "Feishu chats", Text: "Feishu is not configured in this process."}})
	}
	chats, err := a.deps.Chats.FeishuChats(r.Context())
	if err != nil {
		return err
	}
	return a.render(w, r, http.StatusOK, "chats.html", pageData{Title: "Feishu chats", Nav: "chats", Data: chats})
}

// postChats turns a chat's proactive admission on or off.
func (a *Admin) postChats(w http.ResponseWriter, r *http.Request) error {
	if a.deps.Chats == nil {
		return httpserver.Errorf(http.StatusNotImplemented, "Feishu is not configured in this process.")
	}
	ctx := r.Context()
	id := strings.TrimSpace(r.PostFormValue("chat_id"))
	if !strings.HasPrefix(id, "oc_") || len(id) > 100 {
		return httpserver.Errorf(http.StatusBadRequest, "The chat id must be a Feishu chat id (oc_…).")
	}
	actor := currentSession(ctx).Actor
	if r.PostFormValue("op") == "repos" {
		repos := splitList(r.PostFormValue("repos"))
		if _, err := webhooks.CheckRepos(repos); err != nil {
			return httpserver.Errorf(http.StatusBadRequest, "%s. Nothing was changed.", err)
		}
		c, err := a.deps.Chats.SetChatRepos(ctx, id, repos, actor)
		if err != nil {
			return err
		}
		if err := a.audit.record(ctx, a.db, auditEntry{CreatedAt: a.cfg.Now(), Actor: actor, Action: actionChatRepos, Target: "feishu_chat:" + id,
			Detail: strings.Join(c.Repos, " ")}); err != nil {
			return err
		}
		return redirect(w, r, withQuery("/admin/chats", "done", "repos"))
	}
	var on bool
	switch r.PostFormValue("proactive") {
	case "on":
		on = true
	case "off":
	default:
		return httpserver.Errorf(http.StatusBadRequest, "Choose on or off.")
	}
	if _, err := a.deps.Chats.SetProactive(ctx, id, on, actor); err != nil {
		return err
	}
	detail := "off"
	if on {
		detail = "on"
	}
	if err := a.audit.record(ctx, a.db, auditEntry{CreatedAt: a.cfg.Now(), Actor: actor, Action: actionProactive, Target: "feishu_chat:" + id, Detail: detail}); err != nil {
		return err
	}
	a.cfg.Logger.Info("feishu chat proactive admission set", "chat", id, "proactive", on, "by", actor)
	return redirect(w, r, withQuery("/admin/chats", "done", "proactive-"+detail))
}
