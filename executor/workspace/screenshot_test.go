package workspace

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func requireBrowser(t *testing.T) {
	t.Helper()
	if _, err := browser(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("a browser is required in CI: %v", err)
		}
		t.Skip(err)
	}
	requireTool(t, "python3")
}

// page is an HTML page whose whole viewport is one colour.
func page(bg string) string {
	return "<!doctype html><html><body style=\"margin:0;background:" + bg + "\"><h1>Hello</h1></body></html>\n"
}

// pixel decodes a PNG and returns the colour near its bottom-right corner,
// away from the heading.
func pixel(t *testing.T, data []byte) (color.RGBA, image.Rectangle) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	r := img.Bounds()
	c := color.RGBAModel.Convert(img.At(r.Max.X-5, r.Max.Y-5)).(color.RGBA)
	return c, r
}

func TestScreenshotTakesAPageServedInTheSandbox(t *testing.T) {
	requireBrowser(t)
	_, w := sandboxed(t, Config{})
	ctx := context.Background()
	// The base commit's page is red; the work on top of it makes it blue.
	require.NoError(t, w.WriteFile("index.html", page("rgb(255,0,0)")))
	base, err := w.Commit(ctx, "a red page", nil, author)
	require.NoError(t, err)
	require.NoError(t, w.WriteFile("index.html", page("rgb(0,0,255)")))
	serve := "python3 -m http.server 8000 --bind 127.0.0.1"

	t.Run("Served", func(t *testing.T) {
		shot, res, err := w.Screenshot(ctx, Shot{URL: "http://localhost:8000/index.html", Serve: serve, Width: 800, Height: 600})
		require.NoError(t, err, res.Output)
		c, r := pixel(t, shot)
		require.Equal(t, image.Rect(0, 0, 800, 600), r)
		require.Equal(t, color.RGBA{0, 0, 255, 255}, c)
	})

	t.Run("BaseCommit", func(t *testing.T) {
		shot, res, err := w.Screenshot(ctx, Shot{URL: "http://127.0.0.1:8000/index.html", Serve: serve, Base: base, Width: 640, Height: 480})
		require.NoError(t, err, res.Output)
		c, _ := pixel(t, shot)
		require.Equal(t, color.RGBA{255, 0, 0, 255}, c, "the base's page, not the workspace's")
		status, err := w.Status(ctx)
		require.NoError(t, err)
		require.NotContains(t, status, ".superagent-", "nothing of the shot is left in the work tree")
	})

	t.Run("FileURLFullPage", func(t *testing.T) {
		tall := "<!doctype html><html><body style=\"margin:0;background:#fff\"><div style=\"height:1500px;background:rgb(0,128,0)\"></div></body></html>\n"
		require.NoError(t, w.WriteFile("tall.html", tall))
		shot, res, err := w.Screenshot(ctx, Shot{URL: "file:///workspace/tall.html", Width: 400, Height: 300, FullPage: true})
		require.NoError(t, err, res.Output)
		c, r := pixel(t, shot)
		require.Equal(t, 400, r.Dx())
		require.Equal(t, 1500, r.Dy(), "cut at the page's end")
		require.Equal(t, color.RGBA{0, 128, 0, 255}, c)
	})

	t.Run("NothingListens", func(t *testing.T) {
		_, _, err := w.Screenshot(ctx, Shot{URL: "http://localhost:8001/", Serve: "echo not serving", Timeout: 5 * time.Second})
		var se *ShotError
		require.ErrorAs(t, err, &se)
		require.Contains(t, se.Reason, "nothing listens on 127.0.0.1:8001")
		require.Contains(t, se.Reason, "not serving")
	})
}

func TestScreenshotRefusesBadRequests(t *testing.T) {
	for _, tc := range []struct {
		name string
		shot Shot
		want string
	}{
		{"OutsideHost", Shot{URL: "https://example.com/", Serve: "x"}, "served inside the sandbox"},
		{"NoServe", Shot{URL: "http://localhost:3000/"}, "give serve"},
		{"Scheme", Shot{URL: "javascript:alert(1)"}, "scheme"},
		{"FileOutside", Shot{URL: "file:///etc/passwd"}, "under /workspace"},
		{"Quote", Shot{URL: "http://localhost/'$(id)'", Serve: "x"}, "not a URL"},
		{"Viewport", Shot{URL: "file:///workspace/a.html", Width: 5000, Height: 10}, "viewport"},
		{"Base", Shot{URL: "file:///workspace/a.html", Base: "main; rm -rf /"}, "not a commit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.shot.check()
			var se *ShotError
			require.ErrorAs(t, err, &se)
			require.Contains(t, se.Reason, tc.want)
		})
	}
}

func TestReadShotTrustsNothingInTmp(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, ".superagent-shot")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	secret := filepath.Join(t.TempDir(), "host.png")
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 10, 10))))
	require.NoError(t, os.WriteFile(secret, buf.Bytes(), 0o600))

	require.NoError(t, os.Symlink(secret, filepath.Join(dir, "shot.png")))
	_, err := readShot(tmp)
	require.Error(t, err, "a symlink out of /tmp is not followed")

	require.NoError(t, os.Remove(filepath.Join(dir, "shot.png")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "shot.png"), []byte("<html>not a png</html>"), 0o644))
	_, err = readShot(tmp)
	require.ErrorContains(t, err, "not a PNG")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "shot.png"), buf.Bytes(), 0o644))
	data, err := readShot(tmp)
	require.NoError(t, err)
	require.Equal(t, buf.Bytes(), data)

	big := make([]byte, ShotMaxBytes+1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "shot.png"), big, 0o644))
	_, err = readShot(tmp)
	var se *ShotError
	require.True(t, errors.As(err, &se))
	require.Contains(t, se.Reason, "over the limit")
}
