package webhooks

import "time"

// factsFresh is how long this process trusts its own record of a
// repository's facts. Within it, a busy repository's deliveries neither
// write its row nor check it; past it, the next delivery does. Another
// process that recorded the repository meanwhile (a new installation
// creates the row without facts) is thus believed at most this late. An
// installation change this process applies forgets them all.
const factsFresh = time.Minute

// factsCommitted reports whether this process committed f less than
// factsFresh before now.
func (s *Service) factsCommitted(f repositoryFacts, now time.Time) bool {
	_, ok := s.facts.Recall(f, factsFresh, now)
	return ok
}
