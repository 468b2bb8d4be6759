package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLoadConfigReadsProposalTTL(t *testing.T) {
	c, err := loadConfig(envOf(map[string]string{}))
	require.NoError(t, err)
	require.Equal(t, 72*time.Hour, c.ProposalTTL)
	c, err = loadConfig(envOf(map[string]string{"SUPERAGENT_PROPOSAL_TTL": "36h"}))
	require.NoError(t, err)
	require.Equal(t, 36*time.Hour, c.ProposalTTL)
	c, err = loadConfig(envOf(map[string]string{"SUPERAGENT_PROPOSAL_TTL": "off"}))
	require.NoError(t, err)
	require.Negative(t, c.ProposalTTL, "never expire")
	_, err = loadConfig(envOf(map[string]string{"SUPERAGENT_PROPOSAL_TTL": "soon"}))
	require.ErrorContains(t, err, `SUPERAGENT_PROPOSAL_TTL: must be a positive duration such as 30s or 5m, got "soon"`)
}
