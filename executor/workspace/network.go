package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

// sandboxTools are the host binaries that start a sandbox, resolved once by
// Manager.Check. The network ones are set only with Config.Network.
type sandboxTools struct {
	bwrap   string
	slirp   string
	nsenter string
	ip      string
}

// blockedNets are closed to sandboxed commands even with the network on:
// what a service on the host's side of the network trusts. The host's own
// addresses and subnets are added per command. The sandbox's loopback is its
// own; the host's is behind slirp4netns's --disable-host-loopback.
var blockedNets = []string{
	"0.0.0.0/8",      // "this network"
	"10.0.0.0/8",     // private
	"100.64.0.0/10",  // carrier-grade NAT
	"169.254.0.0/16", // link-local, cloud metadata services
	"172.16.0.0/12",  // private
	"192.0.0.0/24",   // IETF protocol assignments
	"192.168.0.0/16", // private
	"198.18.0.0/15",  // benchmarking
	"224.0.0.0/4",    // multicast
	"240.0.0.0/4",    // reserved
	"fc00::/7",       // unique local
	"fe80::/10",      // link-local
	"::ffff:0:0/96",  // IPv4-mapped
}

// slirpNet is the sandbox's side of slirp4netns's --configure: its own
// subnet (gateway 10.0.2.2, DNS 10.0.2.3, the sandbox 10.0.2.100), which
// must stay routed.
var slirpNet = mustCIDR("10.0.2.0/24")

func mustCIDR(s string) *net.IPNet {
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	return n
}

// nsGetUserns is the NS_GET_USERNS ioctl: the user namespace that owns a
// namespace.
const nsGetUserns = 0xb701

// setupTimeout bounds each step of bringing the sandbox's network up.
const setupTimeout = 10 * time.Second

// startNetwork gives the sandbox bwrap just started (held before its command
// by --block-fd) a user-mode network: slirp4netns attached to its network
// namespace, with unreachable routes for blockedNets and the host's own
// addresses, then lets the command run. The command has no capabilities in
// that namespace, so it cannot change the routes. The returned stop ends
// slirp4netns.
func startNetwork(ctx context.Context, l *launch, tools sandboxTools) (stop func(), err error) {
	_ = l.info.SetReadDeadline(time.Now().Add(setupTimeout))
	var info struct {
		ChildPID int `json:"child-pid"`
	}
	if err := json.NewDecoder(l.info).Decode(&info); err != nil {
		return nil, fmt.Errorf("reading bubblewrap's child pid: %w", err)
	}
	netns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", info.ChildPID))
	if err != nil {
		return nil, fmt.Errorf("opening the sandbox's network namespace: %w", err)
	}
	defer netns.Close()
	// Without root, joining the network namespace takes the capabilities of
	// the user namespace that owns it: bwrap's outer one, not the one the
	// command ends up in.
	var userns *os.File
	if !l.privileged {
		fd, _, errno := syscall.Syscall(syscall.SYS_IOCTL, netns.Fd(), nsGetUserns, 0)
		if errno != 0 {
			return nil, fmt.Errorf("finding the sandbox's user namespace: %w", errno)
		}
		userns = os.NewFile(fd, "userns")
		defer userns.Close()
	}

	if err := waitLoopback(ctx, info.ChildPID); err != nil {
		return nil, err
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating pipe for slirp4netns: %w", err)
	}
	defer readyR.Close()
	// fd 3: ready, 4: the network namespace, 5: its user namespace.
	args := []string{"--configure", "--mtu=65520", "--disable-host-loopback", "--ready-fd=3", "--netns-type=path"}
	files := []*os.File{readyW, netns}
	if userns != nil {
		args = append(args, "--userns-path=/proc/self/fd/5")
		files = append(files, userns)
	}
	args = append(args, "/proc/self/fd/4", "tap0")
	// Ends with the command at the latest; stop ends it sooner.
	slirp := exec.CommandContext(ctx, tools.slirp, args...)
	slirp.ExtraFiles = files
	var slirpOut bytes.Buffer
	slirp.Stdout = io.Discard
	slirp.Stderr = &limitedBuffer{buf: &slirpOut, max: 4 << 10}
	slirp.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := slirp.Start(); err != nil {
		_ = readyW.Close()
		return nil, fmt.Errorf("starting slirp4netns: %w", err)
	}
	_ = readyW.Close()
	stop = func() {
		_ = slirp.Process.Kill()
		_ = slirp.Wait()
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	_ = readyR.SetReadDeadline(time.Now().Add(setupTimeout))
	if _, err := readyR.Read(make([]byte, 1)); err != nil {
		return nil, fmt.Errorf("waiting for slirp4netns: %w: %s", err, strings.TrimSpace(slirpOut.String()))
	}

	routes, err := blockedRoutes()
	if err != nil {
		return nil, err
	}
	nsArgs := []string{"--net=/proc/self/fd/3"}
	nsFiles := []*os.File{netns}
	if userns != nil {
		nsArgs = append(nsArgs, "--preserve-credentials", "--user=/proc/self/fd/4")
		nsFiles = append(nsFiles, userns)
	}
	nsArgs = append(nsArgs, "--", tools.ip, "-batch", "-")
	setCtx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	ip := exec.CommandContext(setCtx, tools.nsenter, nsArgs...)
	ip.ExtraFiles = nsFiles
	var b strings.Builder
	for _, r := range routes {
		fmt.Fprintf(&b, "route add unreachable %s\n", r)
	}
	ip.Stdin = strings.NewReader(b.String())
	if out, err := ip.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("closing private and host addresses to the sandbox: %w: %s", err, strings.TrimSpace(string(out)))
	}

	if _, err := l.block.Write([]byte{1}); err != nil {
		return nil, fmt.Errorf("releasing the sandbox: %w", err)
	}
	_ = l.block.Close()
	return stop, nil
}

// waitLoopback waits until bwrap has brought up the loopback interface in
// the network namespace of pid (127.0.0.1 is a local route there): bwrap
// does that after reporting the pid, and slirp4netns configuring the same
// namespace meanwhile makes bwrap fail.
func waitLoopback(ctx context.Context, pid int) error {
	deadline := time.Now().Add(setupTimeout)
	path := fmt.Sprintf("/proc/%d/net/fib_trie", pid)
	for {
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("waiting for the sandbox's loopback: %w", err)
		}
		if strings.Contains(string(data), "/32 host LOCAL") {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("waiting for the sandbox's loopback: timed out")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// blockedRoutes returns blockedNets plus hostNets, without duplicates.
func blockedRoutes() ([]string, error) {
	routes := slices.Clone(blockedNets)
	nets, err := hostNets()
	if err != nil {
		return nil, err
	}
	for _, n := range nets {
		// A route as specific as slirp4netns's own subnet, or more,
		// would cut the sandbox off from its gateway and DNS. A wider
		// one is fine: the subnet's own route wins.
		if ones, _ := n.Mask.Size(); n.IP.To4() != nil && ones >= 24 && slirpNet.Contains(n.IP) {
			continue
		}
		routes = append(routes, n.String())
	}
	slices.Sort(routes)
	return slices.Compact(routes), nil
}

// hostNets returns every address of the host's interfaces and the subnet
// it sits in: its neighbours are as much the host's side as the private
// ranges. Loopback stays out: inside a sandbox, it is the sandbox's own.
func hostNets() ([]*net.IPNet, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("listing the host's addresses: %w", err)
	}
	var nets []*net.IPNet
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() {
			continue
		}
		bits := 128
		if ipn.IP.To4() != nil {
			bits = 32
		}
		nets = append(nets,
			&net.IPNet{IP: ipn.IP, Mask: net.CIDRMask(bits, bits)},
			&net.IPNet{IP: ipn.IP.Mask(ipn.Mask), Mask: ipn.Mask})
	}
	return nets, nil
}
