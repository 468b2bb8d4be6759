package webhooks

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/people"
	"github.com/superagent-dev/superagent/tickets"
)

// ProcessArgs are the arguments of the job that processes deliveries: one
// (DeliveryID), or the batch one group commit stored (DeliveryIDs), worked
// in one transaction.
type ProcessArgs struct {
	DeliveryID  int64   `json:"delivery_id,omitempty"`
	DeliveryIDs []int64 `json:"delivery_ids,omitempty"`
}

// processArgs names the job for deliveries stored together.
func processArgs(ids []int64) ProcessArgs {
	if len(ids) == 1 {
		return ProcessArgs{DeliveryID: ids[0]}
	}
	return ProcessArgs{DeliveryIDs: ids}
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

// Work processes the deliveries named by the job.
func (w *Worker) Work(ctx context.Context, job *river.Job[ProcessArgs]) error {
	if len(job.Args.DeliveryIDs) == 0 {
		return w.s.process(ctx, job.Args.DeliveryID, job.Attempt)
	}
	return w.s.processBatch(ctx, job.Args.DeliveryIDs, job.Attempt)
}

// step is a delivery's outcome once decided: it writes inside tx, sets
// the delivery's new state in out, and has the log lines and metrics said
// after the commit. Running it again after a rollback is safe.
type step func(ctx context.Context, tx *db.Tx, out *outcomes) error

// apply writes one delivery's outcome in a transaction of its own.
func (s *Service) apply(ctx context.Context, d Delivery, st step) error {
	if err := s.d.InTx(ctx, func(tx *db.Tx) error { return s.run(ctx, tx, st) }); err != nil {
		return fmt.Errorf("processing delivery %d: %w", d.ID, err)
	}
	return nil
}

// run runs steps in tx and then writes the states they set, together.
func (s *Service) run(ctx context.Context, tx *db.Tx, steps ...step) error {
	var out outcomes
	for _, st := range steps {
		if err := st(ctx, tx, &out); err != nil {
			return err
		}
	}
	return out.write(ctx, tx, s.now())
}

// processBatch processes the deliveries a group commit stored together.
// GitHub's are decided one by one (their reading may ask GitHub for an
// author's permission) and then written in one transaction, as they were
// stored: under load that is one commit for many cards. If that
// transaction fails, each is written on its own, so that one bad delivery
// fails only itself; Feishu's are processed on their own. The job fails,
// to be retried, when any delivery did; those done by then are skipped.
func (s *Service) processBatch(ctx context.Context, ids []int64, attempt int) error {
	type decided struct {
		d  Delivery
		st step
	}
	var ready []decided
	var errs []error
	for _, id := range ids {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		d, err := getDelivery(ctx, s.d, id)
		switch {
		case errors.Is(err, ErrDeliveryNotFound):
			continue
		case err != nil:
			errs = append(errs, err)
			continue
		case d.State != DeliveryReceived:
			continue
		case d.Source != "github":
			if err := s.processDelivery(ctx, d, attempt); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		st, err := s.decideGitHub(ctx, d, attempt)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ready = append(ready, decided{d: d, st: st})
	}
	if len(ready) == 0 {
		return errors.Join(errs...)
	}
	// What was decided is written even when the job's time ran out
	// meanwhile: the retry then has less to do.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), batchTimeout)
	defer cancel()
	steps := make([]step, len(ready))
	for i, r := range ready {
		steps[i] = func(ctx context.Context, tx *db.Tx, out *outcomes) error {
			if err := r.st(ctx, tx, out); err != nil {
				return fmt.Errorf("processing delivery %d: %w", r.d.ID, err)
			}
			return nil
		}
	}
	err := s.d.InTx(wctx, func(tx *db.Tx) error { return s.run(wctx, tx, steps...) })
	if err != nil && len(ready) > 1 {
		for _, r := range ready {
			if err := s.apply(wctx, r.d, r.st); err != nil {
				errs = append(errs, err)
			}
		}
	} else if err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
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
	return s.processDelivery(ctx, d, attempt)
}

// processDelivery processes d, read just now, in a transaction of its own.
func (s *Service) processDelivery(ctx context.Context, d Delivery, attempt int) error {
	if d.State != DeliveryReceived {
		return nil
	}
	switch d.Source {
	case "github":
		st, err := s.decideGitHub(ctx, d, attempt)
		if err != nil {
			return err
		}
		return s.apply(ctx, d, st)
	case "feishu":
		return s.processFeishu(ctx, d)
	default:
		return s.finish(ctx, d, DeliveryIgnored, "source "+d.Source+" is not processed")
	}
}

func (s *Service) finish(ctx context.Context, d Delivery, state, reason string) error {
	return s.apply(ctx, d, s.finishing(d, state, reason))
}

// finishing ends d as failed or ignored, for reason.
func (s *Service) finishing(d Delivery, state, reason string) step {
	return func(ctx context.Context, tx *db.Tx, out *outcomes) error {
		out.set(d.ID, state, reason)
		tx.AfterCommit(func() {
			s.metrics.count(d.Source, d.Event, map[string]string{DeliveryFailed: "failed", DeliveryIgnored: "dropped"}[state])
			switch state {
			case DeliveryFailed:
				s.logger.Warn("delivery failed", "delivery", d.ID, "source", d.Source, "event", d.Event, "error", reason)
			case DeliveryIgnored:
				s.logger.Debug("delivery ignored", "delivery", d.ID, "source", d.Source, "event", d.Event, "reason", reason)
			}
		})
		return nil
	}
}

// decideGitHub reads a GitHub delivery and decides its outcome: all that
// is not a write to the database (the payload, the author's permission,
// which may take a call to GitHub) happens here, the writes in the step.
// An error means the delivery is to be tried again later.
func (s *Service) decideGitHub(ctx context.Context, d Delivery, attempt int) (step, error) {
	slug, err := s.botSlug(ctx)
	if err != nil {
		return nil, err
	}
	ev, err := s.readGitHub(d, slug)
	if err != nil {
		return s.finishing(d, DeliveryFailed, err.Error()), nil
	}
	if c := ev.Card; c != nil && c.Author.Type == tickets.AuthorUser && c.Author.Login != "" {
		c.Author.Name = s.personName(ctx, s.d, people.KindGitHub, c.Author.Login, c.Author.Name)
		perm, err := s.perms.Level(ctx, ev.InstallationID, c.Owner, c.Name, c.Author.Login)
		if err != nil {
			if attempt < permissionAttempts {
				return nil, err
			}
			s.logger.Warn("author permission unknown", "delivery", d.ID, "login", c.Author.Login, "error", err)
			perm = "unknown"
		}
		c.Author.Permission = perm
	}
	return s.githubStep(d, ev), nil
}

// githubStep is the outcome of a GitHub delivery whose event was read and
// whose card's author, if any, is known: the repository's facts recorded,
// then the card, the installation change, or the reason nothing is made.
func (s *Service) githubStep(d Delivery, ev ghEvent) step {
	then := s.eventStep(d, ev)
	if ev.Repo == nil {
		return then
	}
	facts := repositoryFacts{ev.Repo.GetID(), ev.Repo.GetDefaultBranch(), ev.Repo.GetDescription()}
	return func(ctx context.Context, tx *db.Tx, out *outcomes) error {
		// A batch of deliveries about one repository records its facts
		// once, and a busy repository's batches only now and then.
		if now := s.now(); !s.factsCommitted(facts, now) {
			if err := tx.Once(facts, func() error {
				tx.AfterCommit(func() { s.facts.Remember(facts, struct{}{}, now, factsFresh, now) })
				return githubapp.RecordRepository(ctx, tx, facts.id, facts.defaultBranch, facts.description)
			}); err != nil {
				return err
			}
		}
		return then(ctx, tx, out)
	}
}

func (s *Service) eventStep(d Delivery, ev ghEvent) step {
	switch {
	case ev.Drop != "":
		return s.finishing(d, DeliveryIgnored, ev.Drop)
	case ev.Install != nil:
		change := *ev.Install
		return func(ctx context.Context, tx *db.Tx, out *outcomes) error {
			if err := applyInstallChange(ctx, tx, change, s.now()); err != nil {
				return err
			}
			tx.AfterCommit(s.facts.Forget)
			tx.AfterCommit(func() { s.metrics.count(d.Source, d.Event, "processed") })
			out.set(d.ID, DeliveryProcessed, "")
			return nil
		}
	case ev.Card == nil:
		return s.finishing(d, DeliveryIgnored, "nothing to do")
	}
	c := ev.Card
	c.DeliveryID = d.ID
	return s.admitting(d, c.NewCard, func(ctx context.Context, tx *db.Tx, nc *tickets.NewCard) (string, error) {
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

// readGitHub reads a GitHub delivery's payload for the App whose slug is
// given, a panic in the parser failing it (see readPayload).
func (s *Service) readGitHub(d Delivery, slug string) (ghEvent, error) {
	return readPayload(s, d, func() (ghEvent, error) { return parseGitHubWith(d.Event, d.Body, slug, s.cfg.GitHub.TriggerLabel) })
}

// readOnArrival reads a GitHub delivery's payload as it arrives, outside
// any transaction, so that its card can be made in the transaction that
// stores it (see processOnArrival). It returns nil when that is not to be
// tried: the App's slug is not known yet (learning it takes a call to
// GitHub) or the payload does not read; the job then does what it always
// did, failing a malformed payload there.
func (s *Service) readOnArrival(d Delivery) *ghEvent {
	s.slugMu.Lock()
	slug, known := s.slug, s.slug != "" || s.gh == nil
	s.slugMu.Unlock()
	if !known {
		return nil
	}
	ev, err := s.readGitHub(d, slug)
	if err != nil {
		return nil
	}
	return &ev
}

// processOnArrival processes a GitHub delivery, just stored in tx and read
// by readOnArrival, inside that transaction, when nothing it needs is
// outside the database: done is false when the card's author's permission
// is not cached (asking GitHub is the job's work, never the
// acknowledgement's). An error rolls tx back; the committer then stores
// the delivery again for its job alone.
func (s *Service) processOnArrival(ctx context.Context, tx *db.Tx, d Delivery, ev ghEvent, out *outcomes) (done bool, err error) {
	if c := ev.Card; c != nil && c.Author.Type == tickets.AuthorUser && c.Author.Login != "" {
		a, err := s.cachedAuthor(ctx, tx, ev.InstallationID, c)
		if err != nil || !a.cached {
			return false, err
		}
		c.Author.Permission, c.Author.Name = a.permission, a.name
	}
	d.storing = true
	return true, s.githubStep(d, ev)(ctx, tx, out)
}

// authorKey names a card's author on a repository; knownAuthor is what a
// transaction remembers of them under it, so a batch of one person's
// comments reads their permission and name once.
type authorKey struct {
	installation      int64
	repo, login, name string
}

type knownAuthor struct {
	cached           bool
	permission, name string
}

// cachedAuthor reads the card's author's cached permission and their name
// in tx, once per transaction.
func (s *Service) cachedAuthor(ctx context.Context, tx *db.Tx, installation int64, c *ghCard) (knownAuthor, error) {
	key := authorKey{installation, strings.ToLower(c.Owner + "/" + c.Name), strings.ToLower(c.Author.Login), c.Author.Name}
	if v, ok := tx.Recall(key); ok {
		return v.(knownAuthor), nil
	}
	perm, ok, err := s.perms.Cached(ctx, tx, installation, c.Owner, c.Name, c.Author.Login)
	if err != nil {
		return knownAuthor{}, err
	}
	a := knownAuthor{cached: ok, permission: perm}
	if ok {
		a.name = s.personName(ctx, tx, people.KindGitHub, c.Author.Login, c.Author.Name)
	}
	tx.Remember(key, a)
	return a, nil
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
// transaction (see admitting).
func (s *Service) admit(ctx context.Context, d Delivery, nc tickets.NewCard, check admitCheck) error {
	return s.apply(ctx, d, s.admitting(d, nc, check))
}

// admitCheck, when not nil, runs first inside the card's transaction and
// may drop the card (returning a reason) or adjust it.
type admitCheck func(ctx context.Context, tx *db.Tx, nc *tickets.NewCard) (string, error)

// admitting stores a delivery's card and marks the delivery processed;
// a delivery already processed is left alone.
func (s *Service) admitting(d Delivery, in tickets.NewCard, check admitCheck) step {
	return func(ctx context.Context, tx *db.Tx, out *outcomes) error {
		nc := in
		nc.FreshDelivery = d.storing
		if !d.storing {
			var state string
			if err := tx.QueryRow(ctx, "SELECT state FROM deliveries WHERE id = $1", d.ID).Scan(&state); err != nil {
				return fmt.Errorf("reading state of delivery %d: %w", d.ID, err)
			}
			if state != DeliveryReceived {
				return nil
			}
		}
		if check != nil {
			reason, err := check(ctx, tx, &nc)
			if err != nil {
				return err
			}
			if reason != "" {
				tx.AfterCommit(func() { s.metrics.count(d.Source, d.Event, "dropped") })
				out.set(d.ID, DeliveryIgnored, reason)
				return nil
			}
		}
		card, err := s.store.Admit(ctx, tx, nc, s.cfg.TextLimit, s.cfg.Hooks...)
		switch {
		case errors.Is(err, tickets.ErrDuplicate):
		case err != nil:
			return err
		default:
			tx.AfterCommit(func() {
				s.metrics.count(d.Source, d.Event, "processed")
				s.logger.Info("card made", "card", card.ID, "delivery", d.ID, "kind", card.Kind, "repo", card.Thread.Repo,
					"thread", card.Thread.Key, "state", card.State, "ticket", card.TicketID)
			})
		}
		out.set(d.ID, DeliveryProcessed, "")
		return nil
	}
}

// repositoryFacts are what a delivery says of its repository, and the key
// under which a transaction remembers having recorded them.
type repositoryFacts struct {
	id                         int64
	defaultBranch, description string
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
