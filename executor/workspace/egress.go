package workspace

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// egressRule is one entry of Config.Egress.
type egressRule struct {
	host   string // lower case, no trailing dot; an IP in netip's form; for a wildcard, what follows "*."
	suffix bool   // "*.example.com": any name below example.com, not example.com itself
	port   int    // 0: 80 and 443
}

func (r egressRule) String() string {
	s := r.host
	if r.suffix {
		s = "*." + s
	}
	if r.port != 0 {
		s = net.JoinHostPort(s, strconv.Itoa(r.port))
	}
	return s
}

// allows reports whether the rule lets a command reach host (normalized
// by normalizeHost) on port.
func (r egressRule) allows(host string, port int) bool {
	if r.port == 0 && port != 80 && port != 443 || r.port != 0 && port != r.port {
		return false
	}
	if r.suffix {
		return strings.HasSuffix(host, "."+r.host)
	}
	return host == r.host
}

// parseEgress parses Config.Egress: exact hosts, "*.suffix" wildcards or
// IP addresses, each with an optional ":port". It returns one error naming
// every bad entry.
func parseEgress(entries []string) ([]egressRule, error) {
	var rules []egressRule
	var errs []error
	for _, e := range entries {
		r, err := parseEgressEntry(strings.TrimSpace(e))
		if err != nil {
			errs = append(errs, fmt.Errorf("egress entry %q: %w", e, err))
			continue
		}
		rules = append(rules, r)
	}
	return rules, errors.Join(errs...)
}

// CheckEgress reports, in one error, every entry of an egress list (see
// Config.Egress) that is not a host, a "*.suffix" wildcard or an IP
// address with an optional ":port".
func CheckEgress(entries []string) error {
	_, err := parseEgress(entries)
	return err
}

func parseEgressEntry(e string) (egressRule, error) {
	var r egressRule
	host := e
	if h, p, err := net.SplitHostPort(e); err == nil {
		port, err := strconv.Atoi(p)
		if err != nil || port < 1 || port > 65535 {
			return r, fmt.Errorf("port %q is not a number from 1 to 65535", p)
		}
		host, r.port = h, port
	} else if inner, ok := strings.CutPrefix(e, "["); ok && strings.HasSuffix(inner, "]") {
		host = strings.TrimSuffix(inner, "]")
	} else if strings.HasPrefix(e, "[") || strings.Count(e, ":") == 1 {
		return r, err
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		r.suffix = true
		host = rest
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if r.suffix {
			return r, errors.New("a wildcard needs a domain name, not an address")
		}
		if p, ok := embedsIPv4(a); ok && !a.IsLoopback() && !a.IsUnspecified() {
			return r, fmt.Errorf("an IPv6 address that carries an IPv4 one or a deprecated range (%s) is never reached; list the address itself", p)
		}
		r.host = a.String()
		return r, nil
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if err := checkHostname(host); err != nil {
		return r, err
	}
	if numericName(host) {
		// Resolvers and libc read 2130706433, 127.1, 0x7f.1 or 0177.1 as
		// an IPv4 address in another notation, so such a "name" is an
		// address the list would not show as one.
		return r, errors.New("a number, not a host name: write an address in its dotted form")
	}
	r.host = host
	return r, nil
}

// checkHostname accepts a DNS name: dot-separated labels of letters,
// digits, hyphens and underscores.
func checkHostname(host string) error {
	if host == "" {
		return errors.New("no host name")
	}
	if len(host) > 253 {
		return errors.New("host name longer than 253 characters")
	}
	for label := range strings.SplitSeq(host, ".") {
		if label == "" || len(label) > 63 {
			return errors.New("empty or over-long label (a \"*\" may only stand first, as in *.example.com)")
		}
		for _, c := range label {
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' {
				return fmt.Errorf("%q is not allowed in a host name", c)
			}
		}
	}
	return nil
}

// numericName reports whether host's last label is a number (decimal,
// or hex with 0x): no top-level domain is, and resolvers take such a name
// for an IPv4 address.
func numericName(host string) bool {
	labels := strings.Split(host, ".")
	last := labels[len(labels)-1]
	if hex, ok := strings.CutPrefix(last, "0x"); ok {
		last = hex
		if last == "" {
			return true
		}
		for _, c := range last {
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
		return true
	}
	for _, c := range last {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// embeddedV4 are the IPv6 ranges whose addresses carry an IPv4 address
// (which a gateway, a tunnel or the stack itself would reach) or that are
// deprecated. The egress proxy connects to none of them, whatever the
// IPv4 address inside.
var embeddedV4 = []netip.Prefix{
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (::a.b.c.d), deprecated; :: and ::1 too
	netip.MustParsePrefix("::ffff:0:0/96"),   // IPv4-mapped
	netip.MustParsePrefix("::ffff:0:0:0/96"), // IPv4-translated (SIIT)
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64, well-known prefix
	netip.MustParsePrefix("64:ff9b:1::/48"),  // NAT64, local use
	netip.MustParsePrefix("2001::/32"),       // Teredo
	netip.MustParsePrefix("2002::/16"),       // 6to4
	netip.MustParsePrefix("fec0::/10"),       // site-local, deprecated
}

// embedsIPv4 returns the range of embeddedV4 that holds a, if any. An
// IPv4 address is not in one.
func embedsIPv4(a netip.Addr) (netip.Prefix, bool) {
	if !a.Is6() {
		return netip.Prefix{}, false
	}
	for _, p := range embeddedV4 {
		if p.Contains(a) {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

// normalizeHost puts a requested host in the form egressRule.host has.
// An IPv4-mapped address stays one: it matches no listed IPv4 address,
// and the guard refuses it.
func normalizeHost(host string) string {
	if a, err := netip.ParseAddr(host); err == nil {
		return a.String()
	}
	return strings.ToLower(strings.TrimSuffix(host, "."))
}

// egressAllowed reports whether any rule lets a command reach host:port.
func egressAllowed(rules []egressRule, host string, port int) bool {
	for _, r := range rules {
		if r.allows(host, port) {
			return true
		}
	}
	return false
}

// addrGuard holds the address ranges the egress proxy never connects to,
// whatever name resolved to them: the host's side of the network. It is
// what keeps an allowed name whose DNS answer points at 127.0.0.1 or the
// cloud metadata service (DNS rebinding) from reaching them.
type addrGuard []netip.Prefix

// newAddrGuard returns blockedNets plus the host's own addresses and
// subnets. Loopback, unspecified, link-local, private and multicast
// addresses are refused by refuses itself.
func newAddrGuard() (addrGuard, error) {
	var g addrGuard
	for _, s := range blockedNets {
		g = append(g, netip.MustParsePrefix(s))
	}
	nets, err := hostNets()
	if err != nil {
		return nil, err
	}
	for _, n := range nets {
		if p, err := netip.ParsePrefix(n.String()); err == nil {
			g = append(g, p)
		}
	}
	return g, nil
}

// refuses reports whether a is on the host's side of the network, or an
// IPv6 form that carries an IPv4 address (see embeddedV4).
func (g addrGuard) refuses(a netip.Addr) bool {
	if _, ok := embedsIPv4(a); ok {
		return true
	}
	if !a.IsValid() || a.IsUnspecified() || a.IsLoopback() || a.IsPrivate() || a.IsMulticast() ||
		a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() {
		return true
	}
	for _, p := range g {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
