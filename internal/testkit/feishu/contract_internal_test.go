package feishu

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// An answer with a field the SDK's response type lacks is a violation.
func TestPlantedWrongAnswer(t *testing.T) {
	s := New(t)
	cs, err := calls()
	require.NoError(t, err)
	c, vals := match(cs, "POST", "/open-apis/im/v1/messages/om_1/reactions")
	require.NotNil(t, c)
	require.Equal(t, map[string]string{"message_id": "om_1"}, vals)
	r := httptest.NewRequest(http.MethodPost, "/open-apis/im/v1/messages/om_1/reactions", nil)
	v := s.Expect(func() {
		s.checkAnswer(r, c, []byte(`{"code":0,"msg":"success","data":{"reaction_id":"r1","reaction_type":{"emoji_type":"OK"}}}`))
		s.checkAnswer(r, c, []byte(`{"code":0,"msg":"success","data":{"reaction_id":"r1","emoji":"OK"}}`))
	})
	require.Len(t, v, 1)
	require.Equal(t, `POST /open-apis/im/v1/messages/om_1/reactions (im.v1.messageReaction.create): response body: `+
		`does not decode strictly into the SDK's response type: json: unknown field "emoji"`, v[0].String())
}
