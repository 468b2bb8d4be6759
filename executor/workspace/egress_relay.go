package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// relayArg, as the first argument, starts this binary as the egress relay.
const relayArg = "superagent-sandbox-relay"

// Where the relay finds its parts inside the sandbox. The tools in the
// sandbox are pointed at egressProxyAddr by HTTP_PROXY and HTTPS_PROXY.
const (
	sandboxRunDir   = "/run/superagent"
	sandboxRelay    = sandboxRunDir + "/relay"
	sandboxProxySck = sandboxRunDir + "/egress.sock"
	egressProxyAddr = "127.0.0.1:3128"
	relayMaxConns   = 128
)

// RunRelay runs the sandbox's egress relay when the process was started as
// one, and then exits with the status of the relay's command; otherwise it
// returns at once. With Config.Egress the sandbox starts Config.RelayPath,
// by default the service's own binary, as the relay, so the main of any
// program that gives a Manager an egress list calls RunRelay first.
//
// The relay runs inside the sandbox, as the sandbox's user, before the
// command: it listens on egressProxyAddr in the sandbox's own loopback,
// starts the command, forwards each connection to the host's egress proxy
// through the unix socket bound into the sandbox, and exits with the
// command's status. It holds no authority of its own: the proxy on the
// host decides what is reached.
func RunRelay() {
	if len(os.Args) < 2 || os.Args[1] != relayArg {
		return
	}
	os.Exit(relay(os.Args[2:]))
}

// relayArgs is how the sandbox starts the relay around command.
func relayArgs(command ...string) []string {
	return append([]string{sandboxRelay, relayArg, egressProxyAddr, sandboxProxySck, "--"}, command...)
}

// relay takes listen address, socket path, "--" and the command.
func relay(args []string) int {
	if len(args) < 4 || args[2] != "--" {
		fmt.Fprintln(os.Stderr, "superagent egress relay: usage: "+relayArg+" ADDR SOCKET -- COMMAND...")
		return 127
	}
	ctx := context.Background()
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "superagent egress relay:", err)
		return 127
	}
	go relayServe(ln, args[1])
	// The relay lives exactly as long as the command: bubblewrap ends
	// both with the sandbox.
	cmd := exec.CommandContext(ctx, args[3], args[4:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		if _, ok := errors.AsType[*exec.ExitError](err); !ok {
			fmt.Fprintln(os.Stderr, "superagent egress relay:", err)
			return 127
		}
	}
	if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && st.Signaled() {
		// As a shell and bubblewrap report it.
		return 128 + int(st.Signal())
	}
	return cmd.ProcessState.ExitCode()
}

// relayServe forwards each connection on ln to the unix socket sock, at
// most relayMaxConns at once.
func relayServe(ln net.Listener, sock string) {
	slots := make(chan struct{}, relayMaxConns)
	for {
		slots <- struct{}{}
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer func() { <-slots }()
			defer c.Close()
			up, err := (&net.Dialer{}).DialContext(context.Background(), "unix", sock)
			if err != nil {
				return
			}
			defer up.Close()
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(up, c)
				closeWrite(up)
			}()
			_, _ = io.Copy(c, up)
			closeWrite(c)
			wg.Wait()
		}()
	}
}
