// Package executor runs Executor Sessions: one model conversation per
// Ticket that carries the work from the request to a verified pull
// request, unattended.
//
// A River job (jobs.ExecuteArgs) runs a Ticket's Executor, at most
// one at a time per Ticket: a lease in the executions table, renewed while
// the job works, keeps a second job waiting. The job gives the Session the
// cards and notes that reached the Ticket (its inbox), prepares the
// workspace, and runs the Session; follow-ups that arrive meanwhile are
// appended at the next step.
//
// Everything the Executor does outside its workspace goes through a tool
// whose checks are the host's, not the prompt's: it writes only in Threads
// its Ticket follows and only to repositories its Mandate names, GitHub
// messages begin with the team's agent line, chat messages stay within 100
// words, push and pull request tools wait for the concrete confirmation,
// and every write records its intent before the call and reconciles after
// it, so a crash and a retry never write twice.
package executor
