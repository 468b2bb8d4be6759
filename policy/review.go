package policy

// Rule ids that let a review the bot posts on a person's pull request do
// more than comment. A rule with one of these ids, enabled, is the team's
// word that the bot's review may carry that verdict; its instruction says
// when. Without one every review is a COMMENT.
const (
	RuleReviewApprove        = "review-approve"
	RuleReviewRequestChanges = "review-request-changes"
)

// ReviewEvents are the review events (GitHub's COMMENT, APPROVE,
// REQUEST_CHANGES) the bot's reviews may use under p: COMMENT always, the
// others when their rule is enabled.
func (p Policy) ReviewEvents() []string {
	out := []string{"COMMENT"}
	if r, ok := p.Rule(RuleReviewApprove); ok && r.Enabled {
		out = append(out, "APPROVE")
	}
	if r, ok := p.Rule(RuleReviewRequestChanges); ok && r.Enabled {
		out = append(out, "REQUEST_CHANGES")
	}
	return out
}
