package workspace

import (
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSandboxSeccomp(t *testing.T) {
	if seccompArch == 0 {
		t.Skip("no seccomp filter on " + runtime.GOARCH)
	}
	goroot := strings.TrimSpace(string(must(exec.Command("go", "env", "GOROOT").Output())))
	_, w := sandboxed(t, Config{ExtraReadOnly: []string{goroot}})

	// perl's syscall reaches the kernel with no library in between.
	sys := func(nr int, args ...string) string {
		return "perl -e 'syscall(" + strings.Join(append([]string{strconv.Itoa(nr)}, args...), ", ") + ") == -1 and print \"ERR $!\\n\"'"
	}
	for _, tc := range []struct{ name, command string }{
		{"NewUserNamespace", "unshare -U true"},
		{"NewUserNamespaceViaClone", "unshare -U -f true"},
		{"Keyctl", sys(250, "0", "-1", "0", "0", "0")}, // KEYCTL_GET_KEYRING_ID
		{"AddKey", "perl -e 'my ($t, $d, $p) = (\"user\", \"k\", \"v\"); syscall(248, $t, $d, $p, 1, -2) == -1 and print \"ERR $!\\n\"'"},
		{"Ptrace", sys(101, "0", "0", "0", "0")}, // PTRACE_TRACEME
		{"Personality", "setarch -R true"},       // ADDR_NO_RANDOMIZE
		{"Bpf", sys(321, "0", "0", "0")},
		{"PerfEventOpen", sys(298, "0", "0", "-1", "-1", "0")},
		{"Userfaultfd", sys(323, "0")},
		{"Mount", "perl -e 'my ($s, $d, $f) = (\"none\", \"/tmp\", \"tmpfs\"); syscall(165, $s, $d, $f, 0, 0) == -1 and print \"ERR $!\\n\"'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, w, tc.command)
			require.Contains(t, res.Output, "Operation not permitted", res.Output)
		})
	}

	t.Run("OrdinaryCommandsWork", func(t *testing.T) {
		res := run(t, w, "sh -c 'echo sh works' && git --version && go version && setarch linux32 true && cat /proc/self/status | grep '^Seccomp:'")
		require.Equal(t, 0, res.ExitCode, res.Output)
		require.Contains(t, res.Output, "sh works")
		require.Contains(t, res.Output, "git version")
		require.Contains(t, res.Output, "go version go")
		require.Contains(t, res.Output, "Seccomp:\t2")
	})

	t.Run("ThreadsStillStart", func(t *testing.T) {
		// glibc's pthread_create tries clone3 first; the filter answers
		// ENOSYS so that it falls back to clone.
		res := run(t, w, "go env GOVERSION && git grep -n hello -- README.md")
		require.Equal(t, 0, res.ExitCode, res.Output)
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
