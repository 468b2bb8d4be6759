package policy_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/policy"
)

func TestReviewEvents(t *testing.T) {
	t.Parallel()
	rule := func(id string, on bool) policy.Rule {
		return policy.Rule{ID: id, Name: id, Instruction: "when the tests fail", Enabled: on}
	}
	for _, tc := range []struct {
		name  string
		rules []policy.Rule
		want  []string
	}{
		{"no rules", nil, []string{"COMMENT"}},
		{"disabled rules", []policy.Rule{rule(policy.RuleReviewApprove, false), rule(policy.RuleReviewRequestChanges, false)}, []string{"COMMENT"}},
		{"request changes", []policy.Rule{rule("other", true), rule(policy.RuleReviewRequestChanges, true)}, []string{"COMMENT", "REQUEST_CHANGES"}},
		{"both", []policy.Rule{rule(policy.RuleReviewRequestChanges, true), rule(policy.RuleReviewApprove, true)}, []string{"COMMENT", "APPROVE", "REQUEST_CHANGES"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, policy.Policy{Mode: policy.Explicit, Rules: tc.rules}.ReviewEvents())
		})
	}
}
