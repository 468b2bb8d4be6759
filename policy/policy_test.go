package policy

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateListsEveryProblem(t *testing.T) {
	p := Policy{
		Mode: "sometimes",
		Rules: []Rule{
			{ID: "flaky-ci", Name: "Flaky CI", Instruction: "Fix flaky tests.", Enabled: true},
			{ID: "flaky-ci", Name: "Again", Instruction: "Duplicate id.", Enabled: true},
			{ID: "Bad Id", Name: "", Instruction: " "},
			{ID: "", Name: "two\nlines", Instruction: "x"},
		},
	}
	require.Equal(t, []Problem{
		{Field: "mode", Message: `unknown accept mode "sometimes": use explicit, propose or auto`},
		{Field: "rules[1].id", Message: `rule id "flaky-ci" is already used by rules[0]`},
		{Field: "rules[2].id", Message: `rule id "Bad Id" is malformed: use lowercase letters, digits, '.', '_' and '-', starting with a letter or digit`},
		{Field: "rules[2].name", Message: "rule name is empty"},
		{Field: "rules[2].instruction", Message: "rule instruction is empty"},
		{Field: "rules[3].id", Message: "rule id is empty"},
		{Field: "rules[3].name", Message: "rule name spans several lines"},
	}, Validate(p))
}

func TestValidateAcceptsDefaultAndModes(t *testing.T) {
	require.Empty(t, Validate(Default()))
	for _, m := range []Mode{Explicit, Propose, Auto} {
		require.Empty(t, Validate(Policy{Mode: m, Rules: []Rule{{ID: "r1", Name: "R", Instruction: "i"}}}))
	}
}

func TestRender(t *testing.T) {
	const tmpl = "Policy {version}, mode {mode}:\n{rules}\nend"
	const none = "Policy {version}, mode {mode}: no rule is enabled."
	tests := []struct {
		name string
		p    Policy
		want string
	}{
		{
			name: "no rules uses the none template",
			p:    Default(),
			want: "Policy 7, mode explicit (explicit-request exemption: on): no rule is enabled.",
		},
		{
			name: "disabled rules are not listed",
			p: Policy{Mode: Propose, Rules: []Rule{
				{ID: "a", Name: "A", Instruction: "do a", Enabled: false},
			}},
			want: "Policy 7, mode propose (explicit-request exemption: off): no rule is enabled.",
		},
		{
			name: "enabled rules are listed in order, placeholders in rules are not expanded",
			p: Policy{Mode: Auto, ExplicitRequestExemption: true, Rules: []Rule{
				{ID: "b", Name: "Bee", Instruction: "mention {rules}", Enabled: true},
				{ID: "off", Name: "Off", Instruction: "x", Enabled: false},
				{ID: "a.1", Name: " Ay ", Instruction: "first line\nsecond line", Enabled: true},
			}},
			want: "Policy 7, mode auto (explicit-request exemption: on):\n- Bee (b): mention {rules}\n- Ay (a.1): first line\n  second line\nend",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Render(tmpl, none, 7, tt.p))
		})
	}
}

func TestCheckInferred(t *testing.T) {
	rules := []Rule{{ID: "on", Name: "On", Instruction: "i", Enabled: true}, {ID: "off", Name: "Off", Instruction: "i"}}
	tests := []struct {
		name  string
		mode  Mode
		ids   []string
		error string
	}{
		{"explicit mode infers nothing", Explicit, []string{"on"}, "the accept mode is explicit: only explicit requests become Tickets"},
		{"no rule named", Propose, nil, "an inferred Ticket must name at least one enabled policy rule"},
		{"unknown rule", Auto, []string{"on", "nope"}, `no policy rule has the id "nope"`},
		{"disabled rule", Auto, []string{"off"}, `policy rule "off" is not enabled`},
		{"propose with an enabled rule", Propose, []string{"on"}, ""},
		{"auto with an enabled rule", Auto, []string{"on"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Policy{Mode: tt.mode, Rules: rules}.CheckInferred(tt.ids)
			if tt.error == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.error)
		})
	}
}
