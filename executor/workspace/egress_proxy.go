package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The egress proxy's bounds, per command.
const (
	egressMaxConns    = 64
	egressIdleTimeout = 2 * time.Minute
	egressDialTimeout = 30 * time.Second
	// egressMaxRefusals is how many refused hosts a command's result names.
	egressMaxRefusals = 5
)

// egressSetting names the allowlist in what a refused command reads.
const egressSetting = "SUPERAGENT_SANDBOX_EGRESS"

// egressProxy is the HTTP proxy through which one sandboxed command
// reaches the hosts of Config.Egress, and nothing else: it forwards plain
// HTTP requests and tunnels CONNECT, checks each requested host against
// the list, resolves it itself, refuses any address on the host's side
// (addrGuard) and connects to the address it checked. It listens on a unix
// socket that is bound into the sandbox, whose network namespace has
// nothing but its loopback.
type egressProxy struct {
	rules    []egressRule
	guard    addrGuard
	resolve  func(ctx context.Context, host string) ([]netip.Addr, error)
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	maxConns int
	idle     time.Duration
	log      *slog.Logger

	dir  string // holds the socket
	sock string
	ln   net.Listener
	srv  *http.Server
	rp   *httputil.ReverseProxy
	tr   *http.Transport

	slots chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	done  bool
	conns map[net.Conn]struct{}
	// refused lists distinct refusals, for the command's result.
	refused []string
}

// egressRefusal is a request the proxy turned down.
type egressRefusal struct {
	host, reason string
	port         int
}

func (e *egressRefusal) Error() string {
	return fmt.Sprintf("%s: %s", net.JoinHostPort(e.host, strconv.Itoa(e.port)), e.reason)
}

// startEgress starts the proxy for one command, logging for ticket.
func (m *Manager) startEgress(ticket int64) (*egressProxy, error) {
	p, err := m.egressChecks(ticket)
	if err != nil {
		return nil, err
	}
	p.maxConns = egressMaxConns
	if err := p.start(); err != nil {
		return nil, err
	}
	return p, nil
}

// egressChecks returns a proxy that is not listening: its allowlist,
// address guard, resolver and dialer, logging for ticket.
func (m *Manager) egressChecks(ticket int64) (*egressProxy, error) {
	guard, err := newAddrGuard()
	if err != nil {
		return nil, err
	}
	p := &egressProxy{
		rules:   m.cfg.egress,
		guard:   guard,
		resolve: m.cfg.resolve,
		dial:    m.cfg.dial,
		idle:    egressIdleTimeout,
		log:     m.cfg.Logger.With("ticket", ticket),
	}
	if p.resolve == nil {
		p.resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if p.dial == nil {
		p.dial = (&net.Dialer{Timeout: egressDialTimeout}).DialContext
	}
	return p, nil
}

// start listens on a fresh unix socket, in a directory of its own that only
// this process's user can enter (a unix socket path must stay under 108
// bytes, so not under Config.Root), and serves it.
func (p *egressProxy) start() error {
	dir, err := os.MkdirTemp("", "superagent-egress-")
	if err != nil {
		return fmt.Errorf("creating the egress proxy's socket directory: %w", err)
	}
	p.dir = dir
	p.sock = filepath.Join(dir, "s")
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "unix", p.sock)
	if err == nil {
		// The directory keeps everyone else out; the sandbox user, who
		// reaches the socket through a bind mount, must be able to
		// connect (write) to it.
		err = os.Chmod(p.sock, 0o666)
	}
	if err != nil {
		if ln != nil {
			_ = ln.Close()
		}
		_ = os.RemoveAll(dir)
		return fmt.Errorf("listening for the egress proxy: %w", err)
	}
	p.ln = ln
	p.slots = make(chan struct{}, p.maxConns)
	p.conns = map[net.Conn]struct{}{}
	p.tr = &http.Transport{
		Proxy:               nil, // never the host's own proxy settings
		DialContext:         p.dialChecked,
		MaxIdleConns:        16,
		IdleConnTimeout:     p.idle,
		TLSHandshakeTimeout: egressDialTimeout,
		DisableCompression:  true,
	}
	discard := log.New(io.Discard, "", 0)
	p.rp = &httputil.ReverseProxy{
		// The request line's absolute URL is the target; the Host header
		// is made to match the host that was checked.
		Rewrite:      func(pr *httputil.ProxyRequest) { pr.Out.Host = pr.Out.URL.Host },
		Transport:    p.tr,
		ErrorHandler: p.upstreamError,
		ErrorLog:     discard,
	}
	p.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       p.idle,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          discard,
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		_ = p.srv.Serve(limitedListener{p})
	}()
	return nil
}

// stop closes the listener and every connection, waits for the handlers
// and removes the socket. It returns the refusals, for the result.
func (p *egressProxy) stop() []string {
	p.mu.Lock()
	p.done = true
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	// Outside the lock: a connection's Close takes it.
	for _, c := range conns {
		_ = c.Close()
	}
	_ = p.srv.Close()
	p.wg.Wait()
	p.tr.CloseIdleConnections()
	_ = os.RemoveAll(p.dir)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}

// enter registers a handler or tunnel; false once the proxy is stopping.
func (p *egressProxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return false
	}
	p.wg.Add(1)
	return true
}

func (p *egressProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.enter() {
		return
	}
	defer p.wg.Done()
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(w, "superagent sandbox: this is the egress proxy; send it http:// URLs or CONNECT host:port", http.StatusBadRequest)
		return
	}
	host, port, err := splitTarget(r.URL.Host, 80)
	if err != nil {
		http.Error(w, "superagent sandbox: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err := p.allowed(host, port); err != nil {
		p.refuse(w, err)
		return
	}
	p.rp.ServeHTTP(w, r)
}

// connect tunnels a CONNECT request to its checked address.
func (p *egressProxy) connect(w http.ResponseWriter, r *http.Request) {
	host, port, err := splitTarget(r.Host, 0)
	if err != nil {
		http.Error(w, "superagent sandbox: "+err.Error(), http.StatusBadRequest)
		return
	}
	err = p.allowed(host, port)
	var upstream net.Conn
	if err == nil {
		upstream, err = p.dialChecked(r.Context(), "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	}
	if err != nil {
		p.upstreamError(w, r, err)
		return
	}
	client, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		_ = upstream.Close()
		http.Error(w, "superagent sandbox: cannot tunnel this connection", http.StatusInternalServerError)
		return
	}
	_ = client.SetDeadline(time.Time{})
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		_ = client.Close()
		_ = upstream.Close()
		return
	}
	// brw.Reader holds whatever the client sent after the request, such
	// as a TLS ClientHello, and reads on from client after it.
	p.tunnel(client, brw.Reader, upstream)
}

// upstreamError answers a request that failed on the way out: 403 for a
// refusal, 502 otherwise.
func (p *egressProxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if refusal, ok := errors.AsType[*egressRefusal](err); ok {
		p.refuse(w, refusal)
		return
	}
	p.log.Info("sandbox egress: upstream failed", "host", r.Host, "err", err)
	http.Error(w, "superagent sandbox: the egress proxy could not reach "+r.Host+": "+err.Error(), http.StatusBadGateway)
}

// refuse logs a refusal and answers it with 403, a reason phrase that
// names the setting (tools that print only the status line show it) and a
// short text body.
func (p *egressProxy) refuse(w http.ResponseWriter, err error) {
	refusal, ok := errors.AsType[*egressRefusal](err)
	if !ok {
		refusal = &egressRefusal{reason: err.Error()}
	}
	p.log.Info("sandbox egress refused", "host", refusal.host, "port", refusal.port, "reason", refusal.reason)
	p.mu.Lock()
	if s := refusal.Error(); len(p.refused) < egressMaxRefusals && !slices.Contains(p.refused, s) {
		p.refused = append(p.refused, s)
	}
	p.mu.Unlock()

	var allowed []string
	for _, r := range p.rules {
		allowed = append(allowed, r.String())
	}
	body := fmt.Sprintf("superagent sandbox: the egress proxy refused %s. The sandbox reaches only the hosts in %s (%s).\n",
		refusal.Error(), egressSetting, strings.Join(allowed, ", "))
	conn, brw, hijackErr := http.NewResponseController(w).Hijack()
	if hijackErr != nil {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, body)
		return
	}
	defer conn.Close()
	_, _ = fmt.Fprintf(brw, "HTTP/1.1 403 Forbidden by %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		egressSetting, len(body), body)
	_ = brw.Flush()
}

// allowed checks host:port against the allowlist.
func (p *egressProxy) allowed(host string, port int) error {
	if !egressAllowed(p.rules, host, port) {
		return &egressRefusal{host: host, port: port, reason: "not in " + egressSetting}
	}
	return nil
}

// dialChecked resolves an allowed host, drops every address on the host's
// side and connects to the first remaining one that answers: the address
// it checked, never a second lookup's.
func (p *egressProxy) dialChecked(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := splitTarget(address, 0)
	if err != nil {
		return nil, err
	}
	if err := p.allowed(host, port); err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if addrs, err = p.resolve(ctx, host); err != nil {
		return nil, fmt.Errorf("resolving %s: %w", host, err)
	} else {
		// Go's resolver hands A records back in the IPv4-mapped form;
		// an address written that way by the command is refused above.
		for i, a := range addrs {
			addrs[i] = a.Unmap()
		}
	}
	var public, refused []string
	for _, a := range addrs {
		if p.guard.refuses(a) {
			refused = append(refused, a.String())
		} else {
			public = append(public, a.Unmap().String())
		}
	}
	if len(public) == 0 {
		return nil, &egressRefusal{host: host, port: port,
			reason: "resolves only to addresses on the host's side (loopback, private, link-local, CGNAT, multicast, unspecified, or IPv6 carrying IPv4): " + strings.Join(refused, ", ")}
	}
	ctx, cancel := context.WithTimeout(ctx, egressDialTimeout)
	defer cancel()
	var errs []error
	for _, a := range public {
		c, err := p.dial(ctx, "tcp", net.JoinHostPort(a, strconv.Itoa(port)))
		if err == nil {
			return &idleConn{Conn: c, idle: p.idle}, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// splitTarget splits host[:port] and normalizes the host; without a port
// it uses def, or fails when def is 0.
func splitTarget(hostport string, def int) (string, int, error) {
	host, p, err := net.SplitHostPort(hostport)
	if err != nil {
		if def == 0 {
			return "", 0, fmt.Errorf("bad target %q: %w", hostport, err)
		}
		host, p = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), strconv.Itoa(def)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 || host == "" {
		return "", 0, fmt.Errorf("bad target %q", hostport)
	}
	return normalizeHost(host), port, nil
}

// tunnel copies both ways between client and upstream until both sides
// are done. Every byte passes through upstream, an idleConn, so a tunnel
// on which nothing moves either way for the idle timeout fails there, and
// a failure either way closes both sides.
func (p *egressProxy) tunnel(client net.Conn, fromClient io.Reader, upstream net.Conn) {
	if !p.enter() {
		_ = client.Close()
		_ = upstream.Close()
		return
	}
	defer p.wg.Done()
	var wg sync.WaitGroup
	copyHalf := func(dst net.Conn, src io.Reader) {
		defer wg.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					err = werr
				}
			}
			if errors.Is(err, io.EOF) {
				// The other side may still answer.
				closeWrite(dst)
				return
			}
			if err != nil {
				_ = client.Close()
				_ = upstream.Close()
				return
			}
		}
	}
	wg.Add(2)
	go copyHalf(upstream, fromClient)
	go copyHalf(client, upstream)
	wg.Wait()
	_ = client.Close()
	_ = upstream.Close()
}

// closeWrite half-closes c where it can, so the other side sees the end
// of what this side sent and may still answer.
func closeWrite(c net.Conn) {
	for {
		switch v := c.(type) {
		case interface{ CloseWrite() error }:
			_ = v.CloseWrite()
			return
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		default:
			_ = c.Close()
			return
		}
	}
}

// idleConn is an upstream connection that fails once it has been idle,
// both ways, for idle.
type idleConn struct {
	net.Conn
	idle time.Duration
}

func (c *idleConn) Read(b []byte) (int, error) {
	_ = c.SetDeadline(time.Now().Add(c.idle))
	return c.Conn.Read(b)
}

func (c *idleConn) Write(b []byte) (int, error) {
	_ = c.SetDeadline(time.Now().Add(c.idle))
	return c.Conn.Write(b)
}

func (c *idleConn) NetConn() net.Conn { return c.Conn }

// limitedListener accepts at most maxConns connections at once; the next
// waits in the socket's backlog until one closes.
type limitedListener struct{ p *egressProxy }

func (l limitedListener) Accept() (net.Conn, error) {
	p := l.p
	p.slots <- struct{}{}
	c, err := p.ln.Accept()
	if err != nil {
		<-p.slots
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		<-p.slots
		_ = c.Close()
		return nil, net.ErrClosed
	}
	tc := &trackedConn{Conn: c, p: p}
	p.conns[tc] = struct{}{}
	return tc, nil
}

func (l limitedListener) Close() error   { return l.p.ln.Close() }
func (l limitedListener) Addr() net.Addr { return l.p.ln.Addr() }

// trackedConn gives its slot back when closed.
type trackedConn struct {
	net.Conn
	p    *egressProxy
	once sync.Once
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.p.mu.Lock()
		delete(c.p.conns, c)
		c.p.mu.Unlock()
		<-c.p.slots
	})
	return err
}

func (c *trackedConn) NetConn() net.Conn { return c.Conn }
