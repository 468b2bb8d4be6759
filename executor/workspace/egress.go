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
		r.host = a.Unmap().String()
		return r, nil
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if err := checkHostname(host); err != nil {
		return r, err
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

// normalizeHost puts a requested host in the form egressRule.host has.
func normalizeHost(host string) string {
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Unmap().String()
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

// nat64 is the well-known NAT64 prefix: an address in it stands for the
// IPv4 address in its last 32 bits, which a NAT64 gateway would reach.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

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

// refuses reports whether a is on the host's side of the network.
func (g addrGuard) refuses(a netip.Addr) bool {
	a = a.Unmap()
	if nat64.Contains(a) {
		b := a.As16()
		a = netip.AddrFrom4([4]byte(b[12:]))
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
