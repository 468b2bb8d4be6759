// Command superagent runs the service: `serve` (HTTP and workers, migrating
// at start), `worker` (workers only, to scale out), `migrate` and `version`.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/superagent-dev/superagent/executor/workspace"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = ""

const usage = `superagent hands engineering work to coding agents from GitHub and Feishu.

Usage:
  superagent serve     run the HTTP server and workers (migrates at start)
  superagent worker    run workers only; start several to scale out
  superagent migrate   apply database migrations and exit
  superagent run       work one Ticket on a local git checkout from the terminal
  superagent deliver   sign and send a GitHub or Feishu payload file to a running service
  superagent prompts   export, import or diff the team's prompt configuration
  superagent people    export or import who is who (a JSON file)
  superagent setup     register a GitHub App (manifest flow) or check Feishu credentials
  superagent doctor    check configuration, database, GitHub, Feishu and the model endpoint
  superagent healthcheck
                       exit 0 when the local serve (or worker) process is ready
  superagent version   print the version

Configuration comes from SUPERAGENT_* environment variables; see README.md.
`

func main() {
	// With SUPERAGENT_SANDBOX_EGRESS the sandbox starts this binary as its
	// relay; that run goes no further.
	workspace.RunRelay()
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit code.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "superagent", buildVersion())
		return 0
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return 0
	case "serve", "worker", "migrate", "prompts", "people", "setup", "doctor", "healthcheck", "run", "deliver":
		if asksForHelp(args[1:]) {
			fmt.Fprint(stdout, commandUsage[args[0]])
			return 0
		}
	default:
		fmt.Fprintf(stderr, "superagent: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if args[0] == "healthcheck" {
		// It runs in a container every few seconds: it reads only the
		// address, not the whole configuration.
		return healthcheck(args[1:], getenv, stdout, stderr)
	}
	cfg, err := loadConfig(getenv)
	if err != nil {
		fmt.Fprintln(stderr, "superagent: configuration:", err)
		return 2
	}
	if args[0] == "worker" {
		if err := workerFlags(cfg, args[1:]); err != nil {
			fmt.Fprintln(stderr, "superagent worker:", err)
			return 2
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	switch args[0] {
	case "run":
		return runCommand(ctx, cfg, args[1:], stdout, stderr)
	case "deliver":
		return deliverCommand(ctx, cfg, args[1:], stdout, stderr)
	case "prompts":
		return promptsCommand(ctx, cfg, args[1:], stdout, stderr)
	case "people":
		return peopleCommand(ctx, cfg, args[1:], stdout, stderr)
	case "setup":
		return setupCommand(ctx, cfg, args[1:], stdout, stderr)
	case "doctor":
		return doctorCommand(ctx, cfg, stdout)
	case "serve":
		err = serve(ctx, cfg, stdout, stderr, true)
	case "worker":
		err = serve(ctx, cfg, stdout, stderr, false)
	case "migrate":
		err = migrate(ctx, cfg, stderr)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "superagent:", err)
		return 1
	}
	return 0
}

// commandUsage is each command's help, printed by -h or --help before the
// command reads its configuration or touches anything.
var commandUsage = map[string]string{
	"serve": `Usage:
  superagent serve
      run the HTTP server (webhooks, the admin panel, /api, /metrics) and the
      workers; migrates the database at start
`,
	"worker": `Usage:
  superagent worker [--metrics-addr host:port]
      run workers only, against the same database as serve; start several to
      scale out

      --metrics-addr  serve /metrics, /healthz and /readyz on this address
                      (default: SUPERAGENT_METRICS_ADDR; unset, none)
`,
	"healthcheck": `Usage:
  superagent healthcheck [--addr host:port] [--timeout 5s]
      ask the local process's /readyz and exit 0 when it is ready, 1 when it
      is not (the reason on stderr); for a container's healthcheck

      --addr     the address to ask (default: SUPERAGENT_ADDR; for a worker,
                 its --metrics-addr); a host left out or 0.0.0.0 means
                 127.0.0.1
      --timeout  how long to wait for the answer (default 5s)
`,
	"migrate": `Usage:
  superagent migrate
      apply River's and superagent's database migrations and exit
`,
	"doctor": `Usage:
  superagent doctor
      check the configuration, the database, GitHub, Feishu, the model
      endpoint and the sandbox, and say how to fix what is wrong
`,
	"prompts": promptsUsage,
	"run":     runUsage,
	"deliver": deliverUsage,
	"people":  peopleUsage,
	"setup":   setupUsage,
}

// asksForHelp reports whether a command's arguments ask for its help: -h,
// -help or --help anywhere before a "--".
func asksForHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}
