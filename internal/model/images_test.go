package model_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/model"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

// A model that accepts images sees those of the tool results it has not
// answered yet, once, in a user message of image parts after them.
func TestImagesFollowTheToolResultsThatShowThem(t *testing.T) {
	srv := fakeopenai.New(t, fakeopenai.Text("the page is blue"), fakeopenai.Text("noted"))
	const img = "data:image/png;base64,iVBORw0KGgo="
	c, _ := newClient(t, srv, func(c *model.Config) {
		c.Images = func(_ context.Context, result string) []string {
			if strings.Contains(result, "screenshot") {
				return []string{img}
			}
			return nil
		}
	})
	msgs := []model.Message{
		{Role: model.RoleUser, Content: "make the page blue"},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "screenshot", Arguments: `{}`}, {ID: "c2", Name: "ls", Arguments: `{}`}}},
		{Role: model.RoleTool, ToolCallID: "c1", Content: "took a screenshot"},
		{Role: model.RoleTool, ToolCallID: "c2", Content: "index.html"},
	}
	_, err := c.Complete(t.Context(), model.Request{Messages: msgs})
	require.NoError(t, err)
	sent := srv.Last().Messages
	require.Len(t, sent, 5)
	last := sent[4]
	require.Equal(t, "user", last.Role)
	parts, ok := last.Raw["content"].([]any)
	require.True(t, ok, "content parts: %v", last.Raw)
	require.Len(t, parts, 2)
	image := parts[1].(map[string]any)
	require.Equal(t, "image_url", image["type"])
	require.Equal(t, img, image["image_url"].(map[string]any)["url"])

	// Once answered, the image is not sent again.
	msgs = append(msgs, model.Message{Role: model.RoleAssistant, Content: "the page is blue"}, model.Message{Role: model.RoleUser, Content: "thanks"})
	_, err = c.Complete(t.Context(), model.Request{Messages: msgs})
	require.NoError(t, err)
	for _, m := range srv.Last().Messages {
		_, parts := m.Raw["content"].([]any)
		require.False(t, parts, "no image parts in %v", m.Raw)
	}
}
