// Package workspace owns the per-Ticket git checkout an Executor works in and
// the sandbox that runs the model's shell commands.
//
// # Threat model
//
// Everything the model runs is repository code: a test suite, a Makefile, a
// script the model just wrote. We treat it as hostile. The service around it
// holds things that code must never see: its environment (the GitHub App key,
// the model API key), its data directory (the database, the admin token), the
// other Tickets' workspaces, and a PostgreSQL server on 127.0.0.1 that trusts
// every local connection. So a command runs under bubblewrap in fresh PID,
// network, IPC, UTS and cgroup namespaces (and a user namespace unless the
// service is root, in which case it runs as uid 65534 on the host), with an
// empty environment, a private /proc, /dev and /tmp, read-only system
// directories, only this Ticket's workspace mounted writable, rlimits on
// CPU, memory, processes and file size, a disk quota watched during the
// command, and a seccomp filter. Without Config.Network it has no network
// at all, loopback included; with it, slirp4netns gives it a user-mode
// network from which the host and the private ranges are unreachable. With
// Config.Egress as well, it has only its loopback, where a relay hands each
// connection to an HTTP proxy on the host that reaches the listed hosts and
// nothing else.
//
// The sandbox is one half; the host is the other. The host runs git on the
// same files afterwards (status, commit, push with the installation token), so
// nothing written by the sandbox may make the host run code or leak the token:
//
//   - the workspace's .git directory is mounted read-only inside the sandbox,
//     so hooks, config (aliases, filters, fsmonitor, credential helpers) and
//     refs can only be written by the host;
//   - host git ignores system and global config, runs with an empty HOME,
//     hooks pointed at /dev/null, fsmonitor off, and refuses to commit nested
//     repositories (whose config a child git would read);
//   - the token reaches git only through the environment as an
//     http.extraHeader, never in a URL, an argument or a file, and is scrubbed
//     from any error text;
//   - the file tools (ReadFile, WriteFile, EditFile, Search) go through os.Root,
//     so ".." and symlinks that leave the workspace are refused, and writes
//     never go through a symlink or into .git.
//
// SandboxNone skips bubblewrap entirely and exists only for development on
// machines without it. It is unsafe: commands run as the service's user with
// access to everything that user can reach.
package workspace
