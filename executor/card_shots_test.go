package executor_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
	"github.com/superagent-dev/superagent/shots"
)

// The status card shows the Ticket's latest screenshots before and after
// the change, uploaded through Feishu's image API once each.
func TestStatusCardShowsTheScreenshots(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	e := setup(t, d, nil)
	fs := fakefeishu.New(t)
	var err error
	e.fsc, err = feishu.New(feishu.Config{AppID: fakefeishu.AppID, AppSecret: "secret", BaseURL: fs.URL, ChatInterval: -1}, nil, nil)
	require.NoError(t, err)
	e.x = e.executor(t)
	ctx := context.Background()
	tk := feishuTicket(t, e, fs, "Make the page blue")
	store := shots.New(shots.Config{}, d)
	img := tinyPNG(t)
	for _, label := range []string{"before: http://localhost:8000/", "after: http://localhost:8000/", "after: http://localhost:8000/about"} {
		_, err := store.Put(ctx, tk.ID, label, "", img)
		require.NoError(t, err)
	}
	require.NoError(t, e.x.SyncCard(ctx, tk.ID))

	uploads := fs.Images()
	require.Len(t, uploads, 2, "the latest before and the latest after")
	for _, u := range uploads {
		require.Equal(t, "message", u.Type)
		require.Equal(t, img, u.Data)
	}
	var card struct {
		Elements []map[string]any `json:"elements"`
	}
	var content string
	for _, m := range fs.Messages() {
		if m.MsgType == "interactive" {
			content = m.Content
		}
	}
	require.NoError(t, json.Unmarshal([]byte(content), &card))
	var keys, alts []string
	for _, el := range card.Elements {
		if el["tag"] == "img" {
			keys = append(keys, el["img_key"].(string))
			alts = append(alts, el["alt"].(map[string]any)["content"].(string))
		}
	}
	require.Equal(t, []string{uploads[0].Key, uploads[1].Key}, keys)
	require.Equal(t, []string{"before: http://localhost:8000/", "after: http://localhost:8000/about"}, alts)

	// Shown again (another change of the card), nothing is uploaded again.
	require.NoError(t, e.store.Pause(ctx, d, tk.ID, "feishu:ou_member", "wait"))
	require.NoError(t, e.x.SyncCard(ctx, tk.ID))
	require.Len(t, fs.Images(), 2)
	require.Empty(t, fs.Violations())
}
