package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Browsers are where the sandbox looks for a headless browser, in order:
// Debian's Chromium binary (its /usr/bin/chromium is a launcher script
// that reads /etc/chromium.d, which the sandbox does not bind).
var Browsers = []string{"/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser"}

// Bounds of a screenshot.
const (
	ShotMinWidth       = 320
	ShotMaxWidth       = 1920
	ShotMinHeight      = 200
	ShotMaxHeight      = 2000
	ShotMaxPageHeight  = 4000 // a full-page shot's window, cut to the page
	ShotDefaultWidth   = 1280
	ShotDefaultHeight  = 800
	ShotDefaultTimeout = 60 * time.Second
	ShotMaxTimeout     = 180 * time.Second
	// ShotMaxBytes caps the PNG a shot may produce.
	ShotMaxBytes = 5 << 20
	// browserAddressSpace is the RLIMIT_AS of a shot's browser where no
	// memory cgroup bounds the sandbox (V8 alone reserves a large cage).
	browserAddressSpace = 1 << 40
	// shotDir is where, inside the sandbox's /tmp, the browser writes.
	shotDir = "/tmp/.superagent-shot"
	// shotBase is where a shot of the base commit serves it from.
	shotBase = "/tmp/.superagent-base"
)

// Shot asks for one screenshot of a page served inside the sandbox.
type Shot struct {
	// URL is the page: http(s) on localhost, 127.0.0.1 or [::1] (the
	// sandbox's own loopback), or file:///workspace/….
	URL string
	// Serve is the command that serves the page, started in the
	// background of the same sandbox before the browser (each command has
	// a sandbox of its own, so a server an earlier command started is gone).
	// The browser starts once the URL's port accepts connections.
	Serve string
	// Width and Height are the viewport; zero means the default.
	Width, Height int
	// FullPage takes the whole page, down to ShotMaxPageHeight.
	FullPage bool
	// Base, a commit, serves the page from a clean copy of that commit
	// (git archive, outside the work tree) instead of the workspace.
	Base string
	// Timeout bounds the whole shot; zero means ShotDefaultTimeout.
	Timeout time.Duration
}

// ShotError is a screenshot that could not be taken for a reason the
// caller can fix: a bad request, a page nobody served, a browser failure.
type ShotError struct{ Reason string }

func (e *ShotError) Error() string { return e.Reason }

func shotErrorf(format string, args ...any) error {
	return &ShotError{Reason: fmt.Sprintf(format, args...)}
}

// check validates s and fills in its defaults; it returns the host and
// port to wait for ("" for a file URL).
func (s *Shot) check() (hostPort string, err error) {
	var problems []string
	if s.Width == 0 {
		s.Width = ShotDefaultWidth
	}
	if s.Height == 0 {
		s.Height = ShotDefaultHeight
	}
	if s.Width < ShotMinWidth || s.Width > ShotMaxWidth || s.Height < ShotMinHeight || s.Height > ShotMaxHeight {
		problems = append(problems, fmt.Sprintf("the viewport %dx%d is outside %d–%d by %d–%d pixels", s.Width, s.Height, ShotMinWidth, ShotMaxWidth, ShotMinHeight, ShotMaxHeight))
	}
	switch {
	case s.Timeout <= 0:
		s.Timeout = ShotDefaultTimeout
	case s.Timeout > ShotMaxTimeout:
		s.Timeout = ShotMaxTimeout
	}
	if s.Base != "" && !isHex(s.Base) {
		problems = append(problems, "the base is not a commit id")
	}
	u, err := url.Parse(s.URL)
	switch {
	case err != nil || strings.ContainsAny(s.URL, " \t\r\n'\"\\`$"):
		problems = append(problems, fmt.Sprintf("%q is not a URL the browser can take", s.URL))
	case u.Scheme == "file":
		if u.Host != "" || !strings.HasPrefix(u.Path, sandboxWorkspace+"/") {
			problems = append(problems, "a file URL must name a file under "+sandboxWorkspace)
		}
	case u.Scheme == "http" || u.Scheme == "https":
		host := u.Hostname()
		if host != "localhost" && host != "127.0.0.1" && host != "::1" {
			problems = append(problems, fmt.Sprintf("the page must be served inside the sandbox (localhost, 127.0.0.1 or [::1]), not %q", host))
			break
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		if host == "localhost" {
			host = "127.0.0.1"
		}
		hostPort = net.JoinHostPort(host, port)
		if strings.TrimSpace(s.Serve) == "" {
			problems = append(problems, "give serve, the command that serves the page: each command runs in a sandbox of its own, so nothing an earlier command started is still listening")
		}
	default:
		problems = append(problems, fmt.Sprintf("the URL's scheme %q is not http, https or file", u.Scheme))
	}
	if len(problems) > 0 {
		return "", shotErrorf("%s", strings.Join(problems, "; "))
	}
	return hostPort, nil
}

func isHex(s string) bool {
	if len(s) < 7 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}

// browser returns the first of Browsers the host has.
func browser() (string, error) {
	for _, b := range Browsers {
		if fi, err := os.Stat(b); err == nil && fi.Mode().IsRegular() {
			return b, nil
		}
	}
	return "", errors.New("no headless browser is installed (Debian's chromium package; see docs/operations.md)")
}

// quote makes s one single-quoted shell word.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// script is the command that takes s inside the sandbox.
func (s Shot) script(browserPath, hostPort, serveLimit string) string {
	page := s.URL
	var b strings.Builder
	fmt.Fprintf(&b, "out=%s\nrm -rf \"$out\" && mkdir -p \"$out\" || exit 96\n", shotDir)
	if s.Base != "" {
		fmt.Fprintf(&b, "rm -rf %[1]s && mkdir -p %[1]s && git -C %[2]s archive --format=tar %[3]s | tar -x -C %[1]s || { echo 'superagent: could not copy the base commit %[3]s'; exit 97; }\ncd %[1]s || exit 97\n",
			shotBase, sandboxWorkspace, s.Base)
		page = strings.Replace(page, "file://"+sandboxWorkspace+"/", "file://"+shotBase+"/", 1)
	}
	if strings.TrimSpace(s.Serve) != "" {
		fmt.Fprintf(&b, "%s/bin/sh -c %s >\"$out/serve.log\" 2>&1 </dev/null &\n", serveLimit, quote(s.Serve))
		host, port, _ := net.SplitHostPort(hostPort)
		// bash's /dev/tcp: no curl needed in the sandbox.
		fmt.Fprintf(&b, `i=0
until bash -c 'exec 3<>/dev/tcp/%[1]s/%[2]s' 2>/dev/null; do
  i=$((i+1))
  if [ "$i" -ge %[3]d ]; then echo 'superagent: nothing listens on %[1]s:%[2]s; the serve command said:'; tail -c 4000 "$out/serve.log"; exit 98; fi
  sleep 0.25
done
`, host, port, int(s.Timeout/(250*time.Millisecond))/2)
	}
	height := s.Height
	if s.FullPage {
		height = ShotMaxPageHeight
	}
	args := []string{
		quote(browserPath), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-proxy-server", "--hide-scrollbars", "--mute-audio",
		"--force-device-scale-factor=1", "--virtual-time-budget=3000",
		`--user-data-dir="$out/profile"`, `--crash-dumps-dir="$out/crash"`,
		fmt.Sprintf("--window-size=%d,%d", s.Width, height),
		`--screenshot="$out/shot.png"`, quote(page),
	}
	fmt.Fprintf(&b, "%s >\"$out/browser.log\" 2>&1 </dev/null\nst=$?\n", strings.Join(args, " "))
	b.WriteString(`if [ ! -s "$out/shot.png" ]; then echo "superagent: the browser made no screenshot (exit $st):"; grep -v -e dbus -e 'Fontconfig' "$out/browser.log" | tail -c 4000; exit 99; fi
`)
	return b.String()
}

// Screenshot takes s in the sandbox: the serve command in the background,
// then headless Chromium at the URL, all in one sandboxed command under
// the workspace's limits. It returns the PNG (at most ShotMaxBytes),
// checked to decode as one. A *ShotError is the caller's to fix; the
// Result tells what the commands said.
func (w *Workspace) Screenshot(ctx context.Context, s Shot) ([]byte, Result, error) {
	if w.m.cfg.Sandbox == SandboxNone {
		return nil, Result{}, shotErrorf("screenshots need the command sandbox (bubblewrap); it is off")
	}
	hostPort, err := s.check()
	if err != nil {
		return nil, Result{}, err
	}
	bin, err := browser()
	if err != nil {
		return nil, Result{}, err
	}
	var (
		shot    []byte
		readErr error
	)
	opt := runOpts{collect: func(tmp string) { shot, readErr = readShot(tmp) }}
	serveLimit := ""
	if !w.m.cfg.cgroup.has("memory") {
		// RLIMIT_AS is then the memory bound, and Chromium reserves
		// hundreds of GiB of address space it never touches: the sandbox
		// gets browserAddressSpace, and the serve command is put back
		// under the usual limit.
		opt.addressSpace = browserAddressSpace
		serveLimit = "prlimit --as=" + strconv.FormatInt(w.m.cfg.MemoryBytes, 10) + " -- "
	}
	res, err := w.run(ctx, s.script(bin, hostPort, serveLimit), "", s.Timeout, opt)
	if err != nil {
		return nil, res, err
	}
	switch {
	case res.TimedOut:
		return nil, res, shotErrorf("the screenshot took longer than %s: %s", s.Timeout, strings.TrimSpace(res.Output))
	case res.ExitCode != 0:
		return nil, res, shotErrorf("no screenshot (exit %d): %s", res.ExitCode, strings.TrimSpace(res.Output))
	case readErr != nil:
		return nil, res, readErr
	}
	if s.FullPage {
		if shot, err = cropPage(shot, s.Height); err != nil {
			return nil, res, err
		}
	}
	return shot, res, nil
}

// readShot reads the PNG the browser wrote under tmp, the host side of
// the sandbox's /tmp. Sandboxed code could have put anything there (a
// symlink to a host file, a huge file), so it is read through os.Root,
// as a regular file, up to ShotMaxBytes, and must decode as a PNG of
// bounded size.
func readShot(tmp string) ([]byte, error) {
	root, err := os.OpenRoot(tmp)
	if err != nil {
		return nil, fmt.Errorf("reading the screenshot: %w", err)
	}
	defer root.Close()
	rel := strings.TrimPrefix(shotDir, "/tmp/") + "/shot.png"
	fi, err := root.Lstat(rel)
	if err != nil {
		return nil, shotErrorf("the browser made no screenshot")
	}
	if !fi.Mode().IsRegular() {
		return nil, shotErrorf("the screenshot is not a regular file")
	}
	if fi.Size() > ShotMaxBytes {
		return nil, shotErrorf("the screenshot is %s, over the limit of %s: take a smaller viewport or no full page", formatBytes(fi.Size()), formatBytes(ShotMaxBytes))
	}
	f, err := root.Open(rel)
	if err != nil {
		return nil, fmt.Errorf("reading the screenshot: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, ShotMaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the screenshot: %w", err)
	}
	if len(data) > ShotMaxBytes {
		return nil, shotErrorf("the screenshot is over the limit of %s", formatBytes(ShotMaxBytes))
	}
	if _, err := CheckPNG(data); err != nil {
		return nil, shotErrorf("the screenshot is not a PNG: %v", err)
	}
	return data, nil
}

// CheckPNG decodes data as a PNG no larger than a full-page shot and
// returns it.
func CheckPNG(data []byte) (image.Image, error) {
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > ShotMaxWidth || cfg.Height > ShotMaxPageHeight {
		return nil, fmt.Errorf("%dx%d pixels is outside the bounds of a screenshot", cfg.Width, cfg.Height)
	}
	return png.Decode(bytes.NewReader(data))
}

// cropPage cuts a full-page shot, taken in a window ShotMaxPageHeight
// tall, below the page's end: the rows at the bottom that are all the
// colour of the last row, keeping at least the viewport's height.
func cropPage(data []byte, minHeight int) ([]byte, error) {
	img, err := CheckPNG(data)
	if err != nil {
		return nil, shotErrorf("the screenshot is not a PNG: %v", err)
	}
	r := img.Bounds()
	bg := img.At(r.Min.X, r.Max.Y-1)
	same := func(y int) bool {
		for x := r.Min.X; x < r.Max.X; x++ {
			if img.At(x, y) != bg {
				return false
			}
		}
		return true
	}
	end := r.Max.Y
	for end > r.Min.Y+minHeight && same(end-1) {
		end--
	}
	if end == r.Max.Y {
		return data, nil
	}
	sub, ok := img.(interface {
		SubImage(image.Rectangle) image.Image
	})
	if !ok {
		return data, nil
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, sub.SubImage(image.Rect(r.Min.X, r.Min.Y, r.Max.X, end))); err != nil {
		return nil, fmt.Errorf("cutting the screenshot to the page: %w", err)
	}
	return buf.Bytes(), nil
}

// MergeBase returns the commit the work started from: the merge base of
// HEAD and origin/<base>, or origin's default branch when base is "".
func (w *Workspace) MergeBase(ctx context.Context, base string) (string, error) {
	ref := "refs/remotes/origin/HEAD"
	if base != "" {
		if err := checkBranchName(base); err != nil {
			return "", fmt.Errorf("finding the base commit: %w", err)
		}
		ref = "refs/remotes/origin/" + base
	}
	out, err := w.git(ctx, "merge-base", ref, "HEAD")
	if err != nil {
		return "", fmt.Errorf("finding the base commit (merge base with %s): %w", strings.TrimPrefix(ref, "refs/remotes/"), err)
	}
	return strings.TrimSpace(out), nil
}
