package workspace

import (
	"bufio"
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseEgress(t *testing.T) {
	rules, err := parseEgress([]string{
		"proxy.golang.org", "*.Example.COM", "pypi.org.", "files.pythonhosted.org:8443",
		"203.0.113.7", "[2001:db8::1]:443", "2001:db8::2", "[2001:db8::3]", " spaced.example ",
	})
	require.NoError(t, err)
	var got []string
	for _, r := range rules {
		got = append(got, r.String())
	}
	require.Equal(t, []string{
		"proxy.golang.org", "*.example.com", "pypi.org", "files.pythonhosted.org:8443",
		"203.0.113.7", "[2001:db8::1]:443", "2001:db8::2", "2001:db8::3", "spaced.example",
	}, got)

	// Every bad entry at once.
	_, err = parseEgress([]string{"", "exa mple.com", "a.*.com", "*", "host:0", "host:http", "*.203.0.113.7", "[::1"})
	require.Error(t, err)
	for _, want := range []string{`""`, `"exa mple.com"`, `"a.*.com"`, `"*"`, `"host:0"`, `"host:http"`, `"*.203.0.113.7"`, `"[::1"`} {
		require.ErrorContains(t, err, "egress entry "+want)
	}
}

// TestParseEgressRefusesAddressesInDisguise: names that resolvers read as
// IPv4 addresses, and IPv6 forms that carry one, are refused in the list.
func TestParseEgressRefusesAddressesInDisguise(t *testing.T) {
	for _, e := range []string{
		"2130706433", "127.1", "0x7f.1", "0x7f000001", "0177.0.0.1.", "017700000001", "10.1:443", "a.b.0x1",
	} {
		_, err := parseEgress([]string{e})
		require.ErrorContains(t, err, "a number, not a host name", e)
	}
	for _, e := range []string{
		"::127.0.0.1", "::8.8.8.8", "[::ffff:8.8.8.8]:443", "2002:7f00:1::1", "64:ff9b::808:808",
		"64:ff9b:1::a00:1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "fec0::1",
	} {
		_, err := parseEgress([]string{e})
		require.ErrorContains(t, err, "carries an IPv4 one or a deprecated range", e)
	}
	// Names with digits, and plain addresses, stay fine.
	_, err := parseEgress([]string{"1password.com", "s3.eu-west-1.amazonaws.com", "8.8.8.8", "2606:4700::1111", "0x.example"})
	require.NoError(t, err)
}

func TestEgressAllowed(t *testing.T) {
	rules, err := parseEgress([]string{"proxy.golang.org", "*.example.com", "registry.test:8443", "203.0.113.7"})
	require.NoError(t, err)
	for _, tc := range []struct {
		target string
		want   bool
	}{
		{"proxy.golang.org:443", true},
		{"proxy.golang.org:80", true},
		{"PROXY.golang.org.:443", true},
		{"proxy.golang.org:22", false},
		{"sum.golang.org:443", false},
		{"golang.org:443", false},
		{"evilproxy.golang.org:443", false},
		{"proxy.golang.org.evil.test:443", false},
		{"a.example.com:443", true},
		{"a.b.example.com:80", true},
		{"example.com:443", false}, // a wildcard is for names below it
		{"badexample.com:443", false},
		{"registry.test:8443", true},
		{"registry.test:443", false},
		{"203.0.113.7:443", true},
		{"[::ffff:203.0.113.7]:443", false}, // the mapped form is not the listed address
		{"[::cb00:7107]:443", false},        // nor the IPv4-compatible one
		{"203.0.113.8:443", false},
	} {
		host, port, err := splitTarget(tc.target, 0)
		require.NoError(t, err)
		require.Equal(t, tc.want, egressAllowed(rules, host, port), tc.target)
	}
}

func TestAddrGuard(t *testing.T) {
	g, err := newAddrGuard()
	require.NoError(t, err)
	for _, a := range []string{
		"127.0.0.1", "127.1.2.3", "::1", "0.0.0.0", "::", "0.1.2.3",
		"10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "fc00::1", "fd12::1",
		"169.254.169.254", "fe80::1", "100.64.0.1", "100.127.255.254",
		"224.0.0.1", "239.1.1.1", "ff02::1", "ff05::2", "255.255.255.255", "240.0.0.1",
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254",
		"64:ff9b::a00:1", "64:ff9b::7f00:1", // NAT64 of 10.0.0.1 and 127.0.0.1
		"192.0.0.8", "198.18.0.1",
		// Every IPv6 form that carries an IPv4 address, public or not, and
		// the deprecated site-local range.
		"::7f00:1", "::808:808", "::ffff:8.8.8.8", "::ffff:0:808:808", "64:ff9b::808:808", "64:ff9b:1::808:808",
		"2002:7f00:1::1", "2002:808:808::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "fec0::1", "feff::1",
	} {
		require.True(t, g.refuses(netip.MustParseAddr(a)), a)
	}
	for _, a := range []string{"8.8.8.8", "151.101.1.1", "203.0.113.7", "2606:4700::1111", "2001:4860::8888", "100.128.0.1", "172.32.0.1"} {
		require.False(t, g.refuses(netip.MustParseAddr(a)), a)
	}
	// The host's own addresses, whatever their range.
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			require.True(t, g.refuses(netip.MustParseAddr(ipn.IP.String())), ipn.IP.String())
		}
	}
}

// egressTestAddr is what the test resolver makes of example.com and the
// names below it: a public address (TEST-NET-3), which the real guard
// lets through and the test dialer then connects to a server on loopback.
const egressTestAddr = "203.0.113.7"

// egressTargets starts an HTTPS and an HTTP server on loopback that answer
// with the Host they were asked for, and returns test hooks that resolve
// example.com (and *.example.com) to egressTestAddr and connect that
// address's ports 443 and 80 to them. Any other dial fails the test
// without leaving the machine.
func egressTargets(t *testing.T) (resolve func(context.Context, string) ([]netip.Addr, error),
	dial func(context.Context, string, string) (net.Conn, error), caPEM []byte) {
	t.Helper()
	hello := func(kind string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "hello from %s over %s, path %s\n", r.Host, kind, r.URL.Path)
		})
	}
	tlsSrv := httptest.NewTLSServer(hello("https")) // its certificate is for example.com and *.example.com
	t.Cleanup(tlsSrv.Close)
	plainSrv := httptest.NewServer(hello("http"))
	t.Cleanup(plainSrv.Close)
	targets := map[string]string{
		egressTestAddr + ":443": tlsSrv.Listener.Addr().String(),
		egressTestAddr + ":80":  plainSrv.Listener.Addr().String(),
	}
	resolve = func(_ context.Context, host string) ([]netip.Addr, error) {
		if host == "example.com" || strings.HasSuffix(host, ".example.com") {
			return []netip.Addr{netip.MustParseAddr(egressTestAddr)}, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if to, ok := targets[addr]; ok {
			return (&net.Dialer{}).DialContext(ctx, network, to)
		}
		t.Errorf("the egress proxy dialed %s", addr)
		return nil, errors.New("test dialer: not a test target")
	}
	caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw})
	return resolve, dial, caPEM
}

func TestSandboxEgress(t *testing.T) {
	requireBwrap(t)
	resolve, dial, caPEM := egressTargets(t)
	// slog's handler serializes the proxy's writes, and the test reads
	// only after a command, once its proxy has stopped.
	var logs bytes.Buffer
	cfg := Config{Network: true, Egress: []string{"example.com", "*.example.com"},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	cfg.resolve, cfg.dial = resolve, dial
	_, w := sandboxed(t, cfg)
	require.NoError(t, os.WriteFile(filepath.Join(w.Dir(), "ca.pem"), caPEM, 0o644))

	t.Run("AllowedHostReachable", func(t *testing.T) {
		res := run(t, w, "env | grep -i _proxy | sort; curl -sS --max-time 20 --cacert ca.pem https://example.com/over-tls")
		require.Equal(t, 0, res.ExitCode, res.Output)
		require.Contains(t, res.Output, "hello from example.com over https, path /over-tls")
		require.Contains(t, res.Output, "HTTPS_PROXY=http://127.0.0.1:3128")
		require.Contains(t, res.Output, "https_proxy=http://127.0.0.1:3128")

		res = run(t, w, "curl -sS --max-time 20 --cacert ca.pem https://api.example.com/w && curl -sS --max-time 20 http://example.com/plain")
		require.Equal(t, 0, res.ExitCode, res.Output)
		require.Contains(t, res.Output, "hello from api.example.com over https, path /w")
		require.Contains(t, res.Output, "hello from example.com over http, path /plain")
		require.NotContains(t, res.Output, "refused")

		// git goes through the proxy as well; the test server is no git
		// remote, so what matters is that the request reached it.
		res = run(t, w, "GIT_SSL_CAINFO=/workspace/ca.pem git ls-remote https://example.com/repo.git 2>&1; true")
		require.Contains(t, res.Output, "/repo.git/info/refs", "git reached the server through the proxy: %s", res.Output)
	})

	t.Run("UnlistedHostRefused", func(t *testing.T) {
		res := run(t, w, "curl -sS --max-time 20 https://evil.test/")
		require.NotEqual(t, 0, res.ExitCode, res.Output)
		require.Contains(t, res.Output, "403")
		require.Contains(t, res.Output, "[the sandbox's egress proxy refused evil.test:443: not in SUPERAGENT_SANDBOX_EGRESS;")

		// A plain request gets the reason in the body.
		res = run(t, w, "curl -sS --max-time 20 -w '\\nstatus %{http_code}\\n' http://evil.test/x")
		require.Contains(t, res.Output, "status 403")
		require.Contains(t, res.Output, "superagent sandbox: the egress proxy refused evil.test:80: not in SUPERAGENT_SANDBOX_EGRESS")
		require.Contains(t, res.Output, "(example.com, *.example.com)")

		// Listed names, but not on an unlisted port.
		res = run(t, w, "curl -sS --max-time 20 -o /dev/null -w '%{http_code}\\n' http://example.com:8080/")
		require.Contains(t, res.Output, "403")

		// The reason phrase names the setting, for tools that print only
		// the status line.
		res = run(t, w, bash("exec 3<>/dev/tcp/127.0.0.1/3128; printf 'CONNECT evil.test:443 HTTP/1.1\\r\\nHost: evil.test:443\\r\\n\\r\\n' >&3; head -1 <&3"))
		require.Contains(t, res.Output, "HTTP/1.1 403 Forbidden by SUPERAGENT_SANDBOX_EGRESS")

		require.Contains(t, logs.String(), `level=INFO msg="sandbox egress refused" ticket=1 host=evil.test port=443 reason="not in SUPERAGENT_SANDBOX_EGRESS"`)
		require.Contains(t, logs.String(), `host=example.com port=8080`)
	})

	t.Run("DirectConnectionFails", func(t *testing.T) {
		// Without the proxy there is no way out: no interface but
		// loopback, no route, no name service.
		res := run(t, w, "ip -o link | cut -d: -f2")
		require.Equal(t, "lo\n", strings.ReplaceAll(res.Output, " ", ""))
		res = run(t, w, "curl -sS --max-time 10 --noproxy '*' --cacert ca.pem https://example.com/")
		require.NotEqual(t, 0, res.ExitCode, res.Output)
		require.NotContains(t, res.Output, "hello")
		res = run(t, w, bash("echo > /dev/tcp/"+egressTestAddr+"/443 && echo CONNECTED"))
		require.NotEqual(t, 0, res.ExitCode, res.Output)
		require.Contains(t, res.Output, "Network is unreachable")
	})

	t.Run("HostLoopbackUnreachable", func(t *testing.T) {
		listeners, accepted := hostListeners(t)
		for _, a := range listeners {
			res := run(t, w, connectProbe(a))
			require.NotContains(t, res.Output, "CONNECTED", a)
			// Through the proxy, by address: not listed.
			res = run(t, w, "curl -sS --max-time 10 --noproxy '' -x http://127.0.0.1:3128 -o /dev/null -w '%{http_code}\\n' http://"+a+"/")
			require.Contains(t, res.Output, "403", a)
		}
		select {
		case a := <-accepted:
			t.Fatalf("the sandbox reached the host at %s", a)
		default:
		}
	})
}

// proxyClient is a Go HTTP client that uses p as its proxy.
func proxyClient(p *egressProxy) *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "egress-proxy"}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", p.sock)
		},
		DisableKeepAlives: true,
	}, Timeout: 20 * time.Second}
}

// testProxy starts a proxy for rules with the real guard.
func testProxy(t *testing.T, rules []string, resolve func(context.Context, string) ([]netip.Addr, error),
	dial func(context.Context, string, string) (net.Conn, error)) *egressProxy {
	t.Helper()
	parsed, err := parseEgress(rules)
	require.NoError(t, err)
	m := &Manager{cfg: Config{egress: parsed, Logger: slog.New(slog.DiscardHandler), resolve: resolve, dial: dial}}
	p, err := m.startEgress(1)
	require.NoError(t, err)
	t.Cleanup(func() { p.stop() })
	return p
}

func TestEgressProxyRefusesHostSideAddresses(t *testing.T) {
	// A loopback server standing in for PostgreSQL or the service's own
	// port, and every host-side kind of address, each one listed, with
	// the real resolver ("localhost" is a listed name that resolves to
	// loopback: what DNS rebinding would do).
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "REACHED") }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	targets := []string{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port, "0.0.0.0:" + port,
		"10.1.2.3:80", "172.16.0.1:80", "192.168.1.1:80", "169.254.169.254:80", "100.64.0.1:80", "224.0.0.1:80", "[fe80::1]:80", "[fd00::1]:80"}
	var dialed []string
	var mu sync.Mutex
	// Dials nothing: a dial here would mean the guard let an address
	// through, and a private address is never a target from this machine.
	recordDial := func(_ context.Context, _, addr string) (net.Conn, error) {
		mu.Lock()
		dialed = append(dialed, addr)
		mu.Unlock()
		return nil, errors.New("test dialer: refused to dial")
	}
	p := testProxy(t, targets, nil, recordDial)
	client := proxyClient(p)
	for _, target := range targets {
		t.Run(target, func(t *testing.T) {
			resp, err := client.Get("http://" + target + "/")
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			require.Equal(t, http.StatusForbidden, resp.StatusCode, string(body))
			require.Contains(t, string(body), "resolves only to addresses on the host's side")
			require.NotContains(t, string(body), "REACHED")

			_, err = client.Get("https://" + target + "/")
			require.ErrorContains(t, err, "Forbidden by SUPERAGENT_SANDBOX_EGRESS")
		})
	}
	require.Empty(t, dialed)

	t.Run("IPv6CarryingIPv4", func(t *testing.T) {
		// A listed name whose AAAA records carry an IPv4 address (NAT64,
		// 6to4, Teredo, IPv4-compatible, mapped) or sit in the deprecated
		// site-local range: none is dialled, even for a public IPv4.
		embedded := []string{"64:ff9b::7f00:1", "64:ff9b::808:808", "64:ff9b:1::a00:1", "2002:7f00:1::1",
			"2001:0:4136:e378:8000:63bf:3fff:fdd2", "::7f00:1", "::ffff:0:7f00:1", "fec0::1"}
		for _, a := range embedded {
			resolve := func(context.Context, string) ([]netip.Addr, error) { return []netip.Addr{netip.MustParseAddr(a)}, nil }
			p := testProxy(t, []string{"six.test:" + port}, resolve, recordDial)
			resp, err := proxyClient(p).Get("http://six.test:" + port + "/")
			require.NoError(t, err, a)
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			require.Equal(t, http.StatusForbidden, resp.StatusCode, a)
			require.Contains(t, string(body), "IPv6 carrying IPv4", a)
		}
		// Asked for by address, unlisted: refused before any guard.
		p := testProxy(t, []string{"six.test"}, nil, recordDial)
		for _, target := range []string{"[::ffff:127.0.0.1]:80", "[::7f00:1]:80", "[64:ff9b::7f00:1]:80", "[2002:7f00:1::1]:80"} {
			resp, err := proxyClient(p).Get("http://" + target + "/")
			require.NoError(t, err, target)
			_ = resp.Body.Close()
			require.Equal(t, http.StatusForbidden, resp.StatusCode, target)
		}
		require.Empty(t, dialed)
	})

	t.Run("Control", func(t *testing.T) {
		// The same server is reached when the name resolves to a public
		// address that the dialer then maps to it: the refusals above
		// are the guard's.
		resolve := func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr(egressTestAddr)}, nil
		}
		dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr != egressTestAddr+":"+port {
				t.Errorf("dialed %s", addr)
			}
			return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
		}
		p := testProxy(t, []string{"public.test:" + port}, resolve, dial)
		resp, err := proxyClient(p).Get("http://public.test:" + port + "/")
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.Equal(t, "REACHED", string(body))
	})
}

func TestEgressProxyBoundsConnections(t *testing.T) {
	// An echo server standing in for an allowed host, and one that sends
	// a byte every 100 ms, ten times, whatever it is sent.
	echo := serveTCP(t, "127.0.0.1:0", func(c net.Conn) { _, _ = io.Copy(c, c) })
	drip := serveTCP(t, "127.0.0.1:0", func(c net.Conn) {
		for range 10 {
			time.Sleep(100 * time.Millisecond)
			if _, err := c.Write([]byte{'.'}); err != nil {
				return
			}
		}
	})
	resolve := func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr(egressTestAddr)}, nil
	}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		to := echo.Addr().String()
		if strings.HasSuffix(addr, ":8443") {
			to = drip.Addr().String()
		}
		return (&net.Dialer{}).DialContext(ctx, network, to)
	}
	rules := []string{"echo.test", "drip.test:8443"}
	tunnelTo := func(t *testing.T, p *egressProxy, target string, wait time.Duration) (net.Conn, error) {
		c, err := net.Dial("unix", p.sock)
		require.NoError(t, err)
		_, err = fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		require.NoError(t, err)
		_ = c.SetReadDeadline(time.Now().Add(wait))
		line, err := bufio.NewReader(c).ReadString('\n')
		_ = c.SetReadDeadline(time.Time{})
		if err != nil {
			return c, err
		}
		require.Equal(t, "HTTP/1.1 200 Connection established\r\n", line)
		return c, nil
	}
	tunnel := func(t *testing.T, p *egressProxy, wait time.Duration) (net.Conn, error) {
		return tunnelTo(t, p, "echo.test:443", wait)
	}

	t.Run("AtMostMaxConnsAtOnce", func(t *testing.T) {
		p := testProxy(t, rules, resolve, dial)
		var held []net.Conn
		for range p.maxConns {
			c, err := tunnel(t, p, 10*time.Second)
			require.NoError(t, err)
			held = append(held, c)
		}
		// One more waits for a free slot...
		extra, err := tunnel(t, p, 300*time.Millisecond)
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		// ...and gets its answer once one closes.
		require.NoError(t, held[0].Close())
		line, err := bufio.NewReader(extra).ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "HTTP/1.1 200 Connection established\r\n", line)
		for _, c := range append(held[1:], extra) {
			_ = c.Close()
		}
	})

	t.Run("IdleTunnelsAreClosed", func(t *testing.T) {
		p := testProxy(t, rules, resolve, dial)
		p.idle = 300 * time.Millisecond
		c, err := tunnel(t, p, 10*time.Second)
		require.NoError(t, err)
		defer c.Close()
		// Traffic keeps it open...
		for range 3 {
			_, err = io.WriteString(c, "ping\n")
			require.NoError(t, err)
			buf := make([]byte, 5)
			_, err = io.ReadFull(c, buf)
			require.NoError(t, err)
			require.Equal(t, "ping\n", string(buf))
		}
		// ...and silence ends it: the proxy closes, well before this
		// read's own deadline.
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = c.Read(make([]byte, 1))
		require.ErrorIs(t, err, io.EOF)

		// Traffic one way only keeps it open too: a second of bytes
		// 100 ms apart, past three idle timeouts.
		c, err = tunnelTo(t, p, "drip.test:8443", 10*time.Second)
		require.NoError(t, err)
		defer c.Close()
		_, err = io.WriteString(c, "go\n")
		require.NoError(t, err)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		got, err := io.ReadAll(c)
		require.NoError(t, err)
		require.Equal(t, "..........", string(got))
	})
}

func TestEgressConfig(t *testing.T) {
	_, err := NewManager(Config{Root: t.TempDir(), Egress: []string{"proxy.golang.org", "bad host", "*.1.2.3.4"}, RelayPath: "/nonexistent/relay"})
	require.Error(t, err)
	for _, want := range []string{"needs the network on", `"bad host"`, `"*.1.2.3.4"`, "/nonexistent/relay"} {
		require.ErrorContains(t, err, want)
	}
}
