package admin

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/modelhealth"
	"github.com/superagent-dev/superagent/internal/queue"
)

// Connection kinds the overview knows how to watch.
const (
	ConnGitHub   = "github"
	ConnFeishu   = "feishu"
	ConnModel    = "model"
	ConnSandbox  = "sandbox"
	ConnDatabase = "database"
)

// Connection is one thing the deployment connects to, as main configured
// it: what doctor checks, without calling out (the overview must load
// fast). The panel adds what the database last saw of it.
type Connection struct {
	// Kind is one of the Conn constants; Name is shown.
	Kind string
	Name string
	// Configured says whether its settings are set; Detail says what is
	// configured (an App id, a model name), never a secret.
	Configured bool
	Detail     string
	// Hint says how to fix or finish it (a setting to set, a command to
	// run); shown when it is not configured or has failed.
	Hint string
}

// connectionView is a Connection with what the database last saw of it.
type connectionView struct {
	Connection
	// LastOK and LastFailure are the latest success and failure seen;
	// zero when none. Failure is the failure's text.
	LastOK      time.Time
	LastFailure time.Time
	Failure     string
	// OKWhat and FailWhat say what was seen ("a webhook delivery").
	OKWhat string
	// FailingSince is, for the model, the first failure since the last
	// answer of a role whose latest request failed; zero while every
	// role's model answers.
	FailingSince time.Time
	// WaitingJobs counts, for a model not configured in this process,
	// the jobs that wait for a process with one.
	WaitingJobs int
}

// Healthy reports whether the connection is configured and its latest
// news is not a failure.
func (c connectionView) Healthy() bool {
	return c.Configured && c.FailingSince.IsZero() && (c.LastFailure.IsZero() || c.LastOK.After(c.LastFailure))
}

// roleNames say whose model a role's is.
var roleNames = map[string]string{modelhealth.Main: "the main Session's model", modelhealth.Executor: "the Executors' model"}

// modelSeen adds to c what model_health recorded of each role's model: a
// role whose latest request failed makes the connection failing, with
// since when and why, even while the other role's model answers.
func modelSeen(ctx context.Context, q db.Querier, c *connectionView) error {
	if !c.Configured {
		// This process has no model: the roles' jobs wait for a process
		// that has one, if any runs.
		n, err := queue.WaitingForRoles(ctx, q)
		if err != nil {
			return err
		}
		c.WaitingJobs = n
	}
	for _, role := range []string{modelhealth.Main, modelhealth.Executor} {
		st, err := modelhealth.Read(ctx, q, role)
		if err != nil {
			return err
		}
		if st.LastOK.After(c.LastOK) {
			c.LastOK = st.LastOK
		}
		if !st.Failing() {
			continue
		}
		if c.FailingSince.IsZero() || st.FailingSince.Before(c.FailingSince) {
			c.FailingSince = st.FailingSince
		}
		if st.LastFailure.After(c.LastFailure) || c.Failure == "" {
			c.LastFailure, c.Failure = st.LastFailure, roleNames[role]+" "+st.Model+": "+st.Error
		}
	}
	return nil
}

// seen reads, for each kind, the latest success and failure the database
// recorded: deliveries and sent or failed messages for GitHub and Feishu,
// model requests and failed Sessions for the model, finished commands for
// the sandbox.
func seen(ctx context.Context, q db.Querier, c *connectionView) error {
	// Each query reads one column ordered and limited rather than
	// aggregated, so SQLite keeps the column's TIMESTAMP type.
	var okQs []string
	var failQ string
	switch c.Kind {
	case ConnGitHub, ConnFeishu:
		okQs = []string{
			`SELECT received_at FROM deliveries WHERE source = $1 ORDER BY received_at DESC LIMIT 1`,
			`SELECT sent_at FROM outgoing_messages WHERE source = $1 AND state = 'sent' ORDER BY sent_at DESC LIMIT 1`,
		}
		failQ = `SELECT sent_at, error FROM outgoing_messages WHERE source = $1 AND state = 'failed' ORDER BY sent_at DESC LIMIT 1`
		c.OKWhat = "an event received or a message sent"
	case ConnModel:
		okQs = []string{`SELECT created_at FROM session_requests WHERE $1 <> '' ORDER BY created_at DESC LIMIT 1`}
		failQ = `SELECT updated_at, state_reason FROM sessions WHERE $1 <> '' AND state = 'failed' ORDER BY updated_at DESC LIMIT 1`
		c.OKWhat = "a model request answered"
	case ConnSandbox:
		okQs = []string{`SELECT finished_at FROM session_tool_calls WHERE $1 <> '' AND name = 'run_command' AND state = 'done'
			AND finished_at IS NOT NULL ORDER BY finished_at DESC LIMIT 1`}
		c.OKWhat = "a command run"
	case ConnDatabase:
		c.LastOK, c.OKWhat = time.Now().UTC(), "this page's queries"
		return nil
	}
	for _, okQ := range okQs {
		var last sql.NullTime
		if err := q.QueryRow(ctx, okQ, c.Kind).Scan(&last); err != nil && !errors.Is(err, db.ErrNoRows) {
			return fmt.Errorf("reading the last success of %s: %w", c.Kind, err)
		}
		if last.Valid && last.Time.After(c.LastOK) {
			c.LastOK = last.Time.UTC()
		}
	}
	if c.Kind == ConnModel {
		if err := modelSeen(ctx, q, c); err != nil {
			return err
		}
	}
	if failQ == "" {
		return nil
	}
	var at sql.NullTime
	var why string
	if err := q.QueryRow(ctx, failQ, c.Kind).Scan(&at, &why); err != nil && !errors.Is(err, db.ErrNoRows) {
		return fmt.Errorf("reading the last failure of %s: %w", c.Kind, err)
	}
	if at.Valid && at.Time.After(c.LastFailure) {
		c.LastFailure, c.Failure = at.Time.UTC(), why
	}
	return nil
}
