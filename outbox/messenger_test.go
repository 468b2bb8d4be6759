package outbox_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
	"github.com/superagent-dev/superagent/outbox"
	"github.com/superagent-dev/superagent/tickets"
)

func TestFeishuStatusLinksTheTicketPage(t *testing.T) {
	t.Parallel()
	fs := fakefeishu.New(t)
	fsc, err := feishu.New(feishu.Config{AppID: fakefeishu.AppID, AppSecret: "secret", BaseURL: fs.URL, ChatInterval: -1}, nil, nil)
	require.NoError(t, err)
	root := fs.AddMessage(fakefeishu.Message{ChatID: "oc_team", MsgType: "text", Content: `{"text":"@bot fix it"}`, SenderID: "ou_alice", SenderType: "user"})
	card := tickets.Card{Thread: tickets.Thread{Source: tickets.SourceFeishu, Repo: "oc_team"}}
	for _, tc := range []struct{ base, want string }{
		{"https://agent.example.com/", `{"text":"Paused ticket 4.\nTicket: https://agent.example.com/admin/tickets/4"}`},
		{"", `{"text":"Paused ticket 4."}`},
	} {
		m := &outbox.Messenger{DB: dbtest.SQLite(t), Feishu: fsc, PublicURL: tc.base}
		require.NoError(t, m.Send(context.Background(), tickets.Outgoing{ID: int64(len(tc.base)), Source: tickets.SourceFeishu, Kind: outbox.KindComment,
			TicketID: 4, Target: "feishu:message/" + root.ID, Body: "Paused ticket 4."}, card))
		msgs := fs.Messages()
		require.Equal(t, tc.want, msgs[len(msgs)-1].Content)
	}
}
