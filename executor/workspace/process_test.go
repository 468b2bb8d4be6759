package workspace

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// A Process runs in the Ticket's sandbox with its stdin and stdout piped
// to the caller: it sees the workspace, not the service's environment or
// its files, gets only the variables it is given, and ends at Close with
// everything it started.
func TestProcessRunsSandboxedUntilClosed(t *testing.T) {
	t.Setenv("SUPERAGENT_SERVICE_ONLY", "service-secret")
	_, w := sandboxed(t, Config{})
	script := `echo "pwd=$PWD var=$GIVEN service=${SUPERAGENT_SERVICE_ONLY:-none}"; ls /workspace/README.md; sleep 1000 & while read line; do echo "got $line"; done`
	p, err := w.Start(context.Background(), []string{"/bin/sh", "-c", script}, []string{"GIVEN=yes"})
	require.NoError(t, err)
	out := bufio.NewReader(p.Stdout)
	line, err := out.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "pwd=/workspace var=yes service=none\n", line)
	line, err = out.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "/workspace/README.md\n", line)
	_, err = io.WriteString(p.Stdin, "ping\n")
	require.NoError(t, err)
	line, err = out.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "got ping\n", line)
	require.Equal(t, -1, p.ExitCode(), "running")

	require.NoError(t, p.Close())
	<-p.Done()
	_, err = out.ReadString('\n')
	require.Error(t, err, "its stdout ends with it")
	require.NoError(t, p.Close(), "closing twice is harmless")
}

// EgressTransport reaches only the listed hosts, through the egress
// proxy's checks; without a list there is none.
func TestEgressTransport(t *testing.T) {
	m := &Manager{cfg: Config{Logger: slog.New(slog.DiscardHandler)}}
	_, err := m.EgressTransport(1)
	require.ErrorIs(t, err, ErrNoEgressList)

	resolve, dial, caPEM := egressTargets(t)
	rules, err := parseEgress([]string{"example.com"})
	require.NoError(t, err)
	m = &Manager{cfg: Config{egress: rules, Logger: slog.New(slog.DiscardHandler), resolve: resolve, dial: dial}}
	require.True(t, m.EgressAllows("example.com", 443))
	require.False(t, m.EgressAllows("api.example.com", 443))
	tr, err := m.EgressTransport(1)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	c := &http.Client{Transport: tr}
	res, err := c.Get("https://example.com/mcp")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	require.Equal(t, "hello from example.com over https, path /mcp\n", string(body))
	_, err = c.Get("https://api.example.com/mcp")
	require.ErrorContains(t, err, "not in SUPERAGENT_SANDBOX_EGRESS")
}
