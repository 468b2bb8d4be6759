package workspace

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// BenchmarkRun measures what the sandbox adds to one command: the same
// command run straight in the workspace (SandboxNone, the baseline) and in
// bubblewrap (with the network off, on with slirp4netns when it is
// installed, and on with an egress list: the relay and the host's proxy),
// alternately within one run, so the ratio holds on any
// machine. Both include what Run does around the command (the workdir
// check, the output cap, the workspace size check).
func BenchmarkRun(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bwrap is not installed")
	}
	srv := newGitServer(b, testToken)
	url, _ := srv.newRepo("o", "r", map[string]string{"README.md": "hello\n", "test.sh": "#!/bin/sh\ngrep -q hello README.md\n"})
	remote := Remote{URL: url, Token: testToken, BaseBranch: "main"}
	ctx := context.Background()
	open := func(cfg Config) *Workspace {
		cfg.Root = b.TempDir()
		m, err := NewManager(cfg)
		if err != nil {
			b.Fatal(err)
		}
		ws, err := m.Prepare(ctx, 1, remote, "superagent/ticket-1")
		if err != nil {
			b.Fatal(err)
		}
		return ws
	}
	direct, sandboxed := open(Config{Sandbox: SandboxNone}), open(Config{})
	// With the network on, each command also starts slirp4netns and sets
	// its routes.
	var networked *Workspace
	if _, err := exec.LookPath("slirp4netns"); err == nil {
		networked = open(Config{Network: true})
	}
	egress := open(Config{Network: true, Egress: []string{"proxy.golang.org"}})
	for _, command := range []string{"true", "sh test.sh"} {
		b.Run(command, func(b *testing.B) {
			var plain, boxed, netted, proxied time.Duration
			run := func(ws *Workspace) time.Duration {
				start := time.Now()
				res, err := ws.Run(ctx, command, "", 0)
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("%s: exit %d, %v: %s", command, res.ExitCode, err, res.Output)
				}
				return time.Since(start)
			}
			for b.Loop() {
				plain += run(direct)
				boxed += run(sandboxed)
				if networked != nil {
					netted += run(networked)
				}
				proxied += run(egress)
			}
			n := float64(b.N)
			b.ReportMetric(float64(plain.Microseconds())/n/1000, "direct-ms/op")
			b.ReportMetric(float64(boxed.Microseconds())/n/1000, "bwrap-ms/op")
			b.ReportMetric(float64(boxed)/float64(plain), "ratio")
			if networked != nil {
				b.ReportMetric(float64(netted.Microseconds())/n/1000, "bwrap-net-ms/op")
			}
			b.ReportMetric(float64(proxied.Microseconds())/n/1000, "bwrap-egress-ms/op")
		})
	}
}
