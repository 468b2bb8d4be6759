package webhooks

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/riverqueue/river"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/people"
	"github.com/superagent-dev/superagent/tickets"
)

// ProcessArgs are the arguments of the job that processes one delivery.
type ProcessArgs struct {
	DeliveryID int64 `json:"delivery_id"`
}

// Kind names the job in River.
func (ProcessArgs) Kind() string { return "ingest_delivery" }

// InsertOpts puts the job on the ingestion queue.
func (ProcessArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queue.Ingestion, MaxAttempts: 10}
}

// Worker processes deliveries into cards. It is idempotent: a delivery
// already processed, or that already has its card, is left alone.
type Worker struct {
	river.WorkerDefaults[ProcessArgs]
	s *Service
}

// permissionAttempts is how many job attempts may fail on reading an
// author's permission before the card is made with "unknown".
const permissionAttempts = 3

// Timeout bounds one run (it may call the GitHub API, whose 429 waits are
// capped at a minute). River rescues a job whose process died only once
// this has passed, so it is kept short: a crash delays a delivery by about
// this long, never loses it.
func (w *Worker) Timeout(*river.Job[ProcessArgs]) time.Duration { return 75 * time.Second }

// Work processes the delivery named by the job.
func (w *Worker) Work(ctx context.Context, job *river.Job[ProcessArgs]) error {
	return w.s.process(ctx, job.Args.DeliveryID, job.Attempt)
}

// process turns one stored delivery into its outcome. attempt counts from 1.
func (s *Service) process(ctx context.Context, id int64, attempt int) error {
	d, err := getDelivery(ctx, s.d, id)
	if errors.Is(err, ErrDeliveryNotFound) {
		return river.JobCancel(err) // retrying cannot bring it back
	}
	if err != nil {
		return err
	}
	if d.State != DeliveryReceived {
		return nil
	}
	switch d.Source {
	case "github":
		return s.processGitHub(ctx, d, attempt)
	case "feishu":
		return s.processFeishu(ctx, d)
	default:
		return s.finish(ctx, d, DeliveryIgnored, "source "+d.Source+" is not processed")
	}
}

func (s *Service) finish(ctx context.Context, d Delivery, state, reason string) error {
	if err := finishDelivery(ctx, s.d, d.ID, state, reason, s.now()); err != nil {
		return err
	}
	s.metrics.count(d.Source, d.Event, map[string]string{DeliveryFailed: "failed", DeliveryIgnored: "dropped"}[state])
	switch state {
	case DeliveryFailed:
		s.logger.Warn("delivery failed", "delivery", d.ID, "source", d.Source, "event", d.Event, "error", reason)
	case DeliveryIgnored:
		s.logger.Debug("delivery ignored", "delivery", d.ID, "source", d.Source, "event", d.Event, "reason", reason)
	}
	return nil
}

func (s *Service) processGitHub(ctx context.Context, d Delivery, attempt int) error {
	slug, err := s.botSlug(ctx)
	if err != nil {
		return err
	}
	ev, err := readPayload(s, d, func() (ghEvent, error) { return parseGitHubWith(d.Event, d.Body, slug, s.cfg.GitHub.TriggerLabel) })
	if err != nil {
		return s.finish(ctx, d, DeliveryFailed, err.Error())
	}
	if ev.Repo != nil {
		// On its own: it is idempotent, and a retry of the delivery redoes it.
		if err := githubapp.RecordRepository(ctx, s.d, ev.Repo.GetID(), ev.Repo.GetDefaultBranch(), ev.Repo.GetDescription()); err != nil {
			return err
		}
	}
	switch {
	case ev.Drop != "":
		return s.finish(ctx, d, DeliveryIgnored, ev.Drop)
	case ev.Install != nil:
		err := s.d.InTx(ctx, func(tx *db.Tx) error {
			if err := applyInstallChange(ctx, tx, *ev.Install, s.now()); err != nil {
				return err
			}
			return finishDelivery(ctx, tx, d.ID, DeliveryProcessed, "", s.now())
		})
		if err == nil {
			s.metrics.count(d.Source, d.Event, "processed")
		}
		return err
	case ev.Card == nil:
		return s.finish(ctx, d, DeliveryIgnored, "nothing to do")
	}

	c := ev.Card
	c.DeliveryID = d.ID
	if c.Author.Type == tickets.AuthorUser && c.Author.Login != "" {
		c.Author.Name = s.personName(ctx, people.KindGitHub, c.Author.Login, c.Author.Name)
	}
	if c.Author.Type == tickets.AuthorUser && c.Author.Login != "" {
		perm, err := s.perms.Level(ctx, ev.InstallationID, c.Owner, c.Name, c.Author.Login)
		if err != nil {
			if attempt < permissionAttempts {
				return err
			}
			s.logger.Warn("author permission unknown", "delivery", d.ID, "login", c.Author.Login, "error", err)
			perm = "unknown"
		}
		c.Author.Permission = perm
	}

	return s.admit(ctx, d, c.NewCard, func(tx *db.Tx, nc *tickets.NewCard) (string, error) {
		if c.Branch == "" {
			return "", nil
		}
		keep, err := s.branchMatters(ctx, tx, c)
		if err != nil || keep {
			nc.Thread = c.Thread
			return "", err
		}
		return "branch " + c.Branch + " does not matter", nil
	})
}

// readPayload runs parse, the pure decoding of d's payload, and turns a
// panic in it into an error that fails the delivery. The parsers check what
// they read, so this is the backstop for a bug: a signed but hostile payload
// must end its delivery once, not make River retry a job that panics the
// same way every time.
func readPayload[T any](s *Service, d Delivery, parse func() (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.logger.Error("reading a delivery's payload panicked", "delivery", d.ID, "source", d.Source, "event", d.Event,
				"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			var zero T
			v, err = zero, fmt.Errorf("reading %s payload: internal error: %v", d.Event, p)
		}
	}()
	return parse()
}

// admit stores a delivery's card and marks the delivery processed in one
// transaction. check, when not nil, runs first inside the transaction and
// may drop the card (returning a reason) or adjust it.
func (s *Service) admit(ctx context.Context, d Delivery, nc tickets.NewCard,
	check func(tx *db.Tx, nc *tickets.NewCard) (string, error)) error {
	var card tickets.Card
	dropped := ""
	err := s.d.InTx(ctx, func(tx *db.Tx) error {
		var state string
		if err := tx.QueryRow(ctx, "SELECT state FROM deliveries WHERE id = $1", d.ID).Scan(&state); err != nil {
			return fmt.Errorf("reading state of delivery %d: %w", d.ID, err)
		}
		if state != DeliveryReceived {
			dropped = "already processed"
			return nil
		}
		if check != nil {
			reason, err := check(tx, &nc)
			if err != nil {
				return err
			}
			if reason != "" {
				dropped = reason
				return finishDelivery(ctx, tx, d.ID, DeliveryIgnored, dropped, s.now())
			}
		}
		var err error
		card, err = s.store.Admit(ctx, tx, nc, s.cfg.TextLimit, s.cfg.Hooks...)
		if errors.Is(err, tickets.ErrDuplicate) {
			dropped = "already processed"
		} else if err != nil {
			return err
		}
		return finishDelivery(ctx, tx, d.ID, DeliveryProcessed, "", s.now())
	})
	if err != nil {
		return fmt.Errorf("processing delivery %d: %w", d.ID, err)
	}
	switch {
	case dropped == "already processed":
	case dropped != "":
		s.metrics.count(d.Source, d.Event, "dropped")
	default:
		s.metrics.count(d.Source, d.Event, "processed")
		s.logger.Info("card made", "card", card.ID, "delivery", d.ID, "kind", card.Kind, "repo", card.Thread.Repo,
			"thread", card.Thread.Key, "state", card.State, "ticket", card.TicketID)
	}
	return nil
}

// branchMatters decides whether a push or check failure on a branch is
// kept: the default branch always is; another branch only when a Ticket
// tracks it, and then the card goes to its pull request's Thread if known.
func (s *Service) branchMatters(ctx context.Context, tx *db.Tx, c *ghCard) (bool, error) {
	tracked, err := s.store.TrackedBranch(ctx, tx, c.Thread.Repo, c.Branch)
	if err != nil {
		return false, err
	}
	if !tracked && !c.IsDefault {
		return false, nil
	}
	if !c.IsDefault {
		th, ok, err := s.store.PullThreadForBranch(ctx, tx, c.Thread.Repo, c.Branch)
		if err != nil {
			return false, err
		}
		if ok {
			c.Thread = tickets.Thread{Source: th.Source, Key: th.Key, Repo: th.Repo, Number: th.Number}
		}
	}
	return true, nil
}

// botSlug returns the configured slug, or reads it from the API once.
func (s *Service) botSlug(ctx context.Context) (string, error) {
	s.slugMu.Lock()
	defer s.slugMu.Unlock()
	if s.slug != "" || s.gh == nil {
		return s.slug, nil
	}
	slug, err := s.gh.Slug(ctx)
	if err != nil {
		return "", fmt.Errorf("learning the App's slug: %w", err)
	}
	s.slug = slug
	return slug, nil
}

// Worker returns the service's job worker, for tests and tools that work a
// delivery without a running queue.
func (s *Service) Worker() *Worker { return &Worker{s: s} }
