// Package orchestrator runs the main Session: the one logical conversation
// per deployment that routes Trigger cards to Tickets and never does
// technical work. Its turns run as River jobs on the routing queue, after a
// short debounce so a burst of candidates becomes one batch, and never two
// at once across processes (a lease in routing_state). A turn appends the
// waiting candidates, Reports, hand-backs and follow-up notices to the
// Session as rendered cards and runs it with the main Session's tools,
// whose host checks (the gate, note limits, attach references, the wait
// guard) no prompt text can change. Each routing decision is applied in one
// transaction: the Ticket, its Mandate, its subscription, the card's state,
// the Executor job and the acknowledgement intent.
package orchestrator
