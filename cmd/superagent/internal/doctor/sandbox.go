package doctor

import (
	"context"
	"os/exec"

	"github.com/superagent-dev/superagent/executor/workspace"
)

// sandbox checks what the Executors need to work a repository: git on the
// PATH, and a command sandbox that starts (bubblewrap with user
// namespaces), unless it was turned off on purpose.
func (d *doctor) sandbox(ctx context.Context) Result {
	if d.cfg.Model == "" {
		return skip("no model is configured, so no Executor runs")
	}
	if _, err := exec.LookPath("git"); err != nil {
		return fail("install git (Debian: apt-get install git)", "git is not on the PATH: Executors cannot clone, commit or push")
	}
	mode := workspace.SandboxMode(d.cfg.Sandbox)
	if mode == "" {
		mode = workspace.SandboxBwrap
	}
	if mode == workspace.SandboxNone {
		return warn("set SUPERAGENT_SANDBOX=bwrap (the default) and install bubblewrap",
			"SUPERAGENT_SANDBOX=none: the model's commands run without isolation and can read this service's files")
	}
	if d.cfg.SandboxNetwork {
		if _, err := exec.LookPath("slirp4netns"); err != nil {
			return fail("install slirp4netns (Debian: apt-get install slirp4netns), or set SUPERAGENT_SANDBOX_NETWORK=off",
				"SUPERAGENT_SANDBOX_NETWORK=on but slirp4netns is not on the PATH: the sandbox's network cannot start")
		}
	}
	m, err := workspace.NewManager(workspace.Config{Root: d.cfg.DataDir + "/workspaces", Sandbox: mode, Network: d.cfg.SandboxNetwork})
	if err == nil {
		err = m.Check(ctx)
	}
	if err != nil {
		return fail("install bubblewrap (Debian: apt-get install bubblewrap) and allow unprivileged user namespaces; see docs/operations.md",
			"the command sandbox does not start: %v", err)
	}
	if d.cfg.SandboxNetwork {
		return ok("git and the bubblewrap sandbox work, with its own network over slirp4netns")
	}
	return ok("git and the bubblewrap sandbox work")
}
