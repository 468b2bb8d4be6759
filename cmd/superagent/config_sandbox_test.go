package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoadConfigReadsSandboxEgress(t *testing.T) {
	c, err := loadConfig(envOf(map[string]string{"SUPERAGENT_MODEL": "m", "SUPERAGENT_SANDBOX_NETWORK": "on",
		"SUPERAGENT_SANDBOX_EGRESS": "proxy.golang.org, *.pythonhosted.org ,registry.npmjs.org:443"}))
	require.NoError(t, err)
	require.Equal(t, []string{"proxy.golang.org", "*.pythonhosted.org", "registry.npmjs.org:443"}, c.SandboxEgress)

	_, err = loadConfig(envOf(map[string]string{"SUPERAGENT_MODEL": "m", "SUPERAGENT_SANDBOX_EGRESS": "proxy.golang.org"}))
	require.EqualError(t, err, "SUPERAGENT_SANDBOX_EGRESS: needs SUPERAGENT_SANDBOX_NETWORK=on")

	_, err = loadConfig(envOf(map[string]string{"SUPERAGENT_MODEL": "m", "SUPERAGENT_SANDBOX_NETWORK": "on",
		"SUPERAGENT_SANDBOX_EGRESS": "proxy.golang.org,a.*.com,pypi.org:https"}))
	require.EqualError(t, err, `SUPERAGENT_SANDBOX_EGRESS: egress entry "a.*.com": '*' is not allowed in a host name; egress entry "pypi.org:https": port "https" is not a number from 1 to 65535`)

	// Numbers that resolvers read as addresses, and IPv6 carrying IPv4.
	_, err = loadConfig(envOf(map[string]string{"SUPERAGENT_MODEL": "m", "SUPERAGENT_SANDBOX_NETWORK": "on",
		"SUPERAGENT_SANDBOX_EGRESS": "2130706433,127.1,[64:ff9b::a00:1]:443"}))
	require.ErrorContains(t, err, `egress entry "2130706433": a number, not a host name`)
	require.ErrorContains(t, err, `egress entry "127.1": a number, not a host name`)
	require.ErrorContains(t, err, `egress entry "[64:ff9b::a00:1]:443": an IPv6 address that carries an IPv4 one`)
}
