package shots_test

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/shots"
	"github.com/superagent-dev/superagent/tickets"
)

func pngOf(t *testing.T, w, h int, c color.Color) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

func ticket(t *testing.T, d *db.DB) int64 {
	t.Helper()
	tk, err := tickets.New(tickets.Config{}).CreateTicket(context.Background(), d, tickets.Ticket{Title: "Restyle the page", Repo: "acme/web"})
	require.NoError(t, err)
	return tk.ID
}

func TestStoreKeepsAndServesShots(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		store := shots.New(shots.Config{}, d)
		id := ticket(t, d)
		red := pngOf(t, 40, 30, color.RGBA{255, 0, 0, 255})

		sh, err := store.Put(ctx, id, "before: the home page", "http://localhost:8000/", red)
		require.NoError(t, err)
		require.Regexp(t, `^[0-9a-f]{32}$`, sh.Token)
		require.Equal(t, 40, sh.Width)
		require.Equal(t, 30, sh.Height)
		again, err := store.Put(ctx, id, "after", "http://localhost:8000/", red)
		require.NoError(t, err)
		require.NotEqual(t, sh.Token, again.Token, "each shot has a token of its own")

		got, err := store.PNG(ctx, sh.Token)
		require.NoError(t, err)
		require.Equal(t, red, got)
		list, err := store.OfTicket(ctx, id)
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Equal(t, "before: the home page", list[0].Label)
		require.NoError(t, store.SetFeishuImageKey(ctx, sh.Token, "img_v3_abc"))
		list, err = store.OfTicket(ctx, id)
		require.NoError(t, err)
		require.Equal(t, "img_v3_abc", list[0].FeishuImageKey)

		_, err = store.Put(ctx, id, "x", "", []byte("<svg onload=alert(1)>"))
		require.ErrorContains(t, err, "not a PNG")
		_, err = store.Put(ctx, id, "x", "", append(red, make([]byte, shots.MaxBytes)...))
		require.ErrorContains(t, err, "over the limit")
		list, err = store.OfTicket(ctx, id)
		require.NoError(t, err)
		require.Len(t, list, 2, "a refused shot keeps nothing")

		r := chi.NewRouter()
		store.Routes(r, nil)
		srv := httptest.NewServer(r)
		defer srv.Close()
		get := func(method, path string, header ...string) (*http.Response, []byte) {
			req, err := http.NewRequest(method, srv.URL+path, nil)
			require.NoError(t, err)
			for i := 0; i+1 < len(header); i += 2 {
				req.Header.Set(header[i], header[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			return resp, body
		}
		resp, body := get(http.MethodGet, shots.Path(sh.Token))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "image/png", resp.Header.Get("Content-Type"))
		require.Contains(t, resp.Header.Get("Cache-Control"), "public")
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
		img, err := png.Decode(bytes.NewReader(body))
		require.NoError(t, err)
		require.Equal(t, 40, img.Bounds().Dx())

		resp, body = get(http.MethodHead, shots.Path(sh.Token))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Empty(t, body)
		resp, _ = get(http.MethodGet, shots.Path(sh.Token), "If-None-Match", `"`+sh.Token+`"`)
		require.Equal(t, http.StatusNotModified, resp.StatusCode)

		for _, path := range []string{
			shots.Path(strings.Repeat("0", 32)),   // unknown
			shots.Path(strings.ToUpper(sh.Token)), // not the token's spelling
			"/shots/" + sh.Token,                  // no .png
			"/shots/" + sh.Token + ".png.png",     // not a token
			shots.Path("' OR 1=1 --"),             // not a token
			"/shots/%2e%2e%2fadmin.png",           // not a token
		} {
			resp, _ := get(http.MethodGet, path)
			require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		}
	})
}

func TestStoreCapsShotsPerTicket(t *testing.T) {
	d := dbtest.SQLite(t)
	ctx := context.Background()
	store := shots.New(shots.Config{}, d)
	id := ticket(t, d)
	small := pngOf(t, 2, 2, color.White)
	for range shots.MaxPerTicket {
		_, err := store.Put(ctx, id, "", "", small)
		require.NoError(t, err)
	}
	_, err := store.Put(ctx, id, "", "", small)
	var tooMany *shots.TooManyError
	require.ErrorAs(t, err, &tooMany)
	other := ticket(t, d)
	_, err = store.Put(ctx, other, "", "", small)
	require.NoError(t, err, "the cap is per Ticket")
}

func TestLinkedFindsOnlyThisServicesShots(t *testing.T) {
	const pub = "https://agent.example.com"
	a, b := strings.Repeat("a", 32), strings.Repeat("b", 32)
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"Markdown", "![before](" + pub + "/shots/" + a + ".png)\n![after](" + pub + "/shots/" + b + ".png \"after\")", []string{a, b}},
		{"HTML", `<img src="` + pub + `/shots/` + a + `.png" width="400"> <IMG alt=x src='` + pub + `/shots/` + b + `.png'>`, []string{a, b}},
		{"Twice", "![x](" + pub + "/shots/" + a + ".png) ![y](" + pub + "/shots/" + a + ".png)", []string{a}},
		{"OtherHost", "![x](https://evil.example/shots/" + a + ".png) ![y](https://agent.example.com.evil.example/shots/" + b + ".png)", nil},
		{"PlainLink", "[not an image](" + pub + "/shots/" + a + ".png)", nil},
		{"NotAToken", "![x](" + pub + "/shots/" + a[:31] + ".png) ![y](" + pub + "/shots/" + strings.ToUpper(b) + ".png)", nil},
		{"AnyImages", "![x](https://i.imgur.com/1.png) ![y](https://i.imgur.com/2.png)", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, shots.Linked(tc.text, pub+"/"))
		})
	}
}
