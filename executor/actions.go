package executor

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/internal/secret"
	"github.com/superagent-dev/superagent/tickets"
)

// ciReport is what the host adds to a check failure before the Executor
// reads it: the failed jobs, each with the step that failed and the end
// of its log, and the commit they ran on.
type ciReport struct {
	text string
	// head is the commit the failed jobs ran on, "" when unknown.
	head string
}

var (
	// actionsURL is a workflow run's page, or one of its jobs'
	// (…/actions/runs/<run>/job/<job>): a run's id is not its jobs'.
	actionsURL = regexp.MustCompile(`/actions/runs/([0-9]+)(?:/job/([0-9]+))?`)
	// checkRunURL is a check run's page (…/runs/<id>); for a GitHub
	// Actions job its id is the job's.
	checkRunURL = regexp.MustCompile(`/runs/([0-9]+)$`)
	// logStamp is the time GitHub writes before every line of a job's log.
	logStamp = regexp.MustCompile(`(?m)^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z ?`)
)

// maxExcerpt is how much of the failed jobs' logs the Executor is shown,
// shared among them.
const maxExcerpt = 6000

// maxFailedJobs is how many failed jobs of one run get an excerpt.
const maxFailedJobs = 3

// failedJob reports whether a job's conclusion is a failure to fix.
func failedJob(conclusion string) bool {
	return conclusion == "failure" || conclusion == "timed_out" || conclusion == "startup_failure"
}

// ciFailure reads, for a check failure card, what GitHub Actions can tell:
// for a workflow run, its jobs (listed by the run's id) and, for each
// failed one, the step that failed and the end of its log (read by the
// job's id); for one job's page, that job. A check run of another app
// has no logs here: its output is in the card. Failing to read is said
// in the text, never fatal.
func (e *Executor) ciFailure(ctx context.Context, repo string, c tickets.Card) ciReport {
	if e.deps.GitHub == nil {
		return ciReport{}
	}
	var runID, jobID int64
	if m := actionsURL.FindStringSubmatch(c.URL); m != nil {
		runID, _ = strconv.ParseInt(m[1], 10, 64)
		jobID, _ = strconv.ParseInt(m[2], 10, 64)
	} else if m := checkRunURL.FindStringSubmatch(c.URL); m != nil && strings.TrimSuffix(c.Author.Login, "[bot]") == "github-actions" {
		jobID, _ = strconv.ParseInt(m[1], 10, 64)
	} else {
		return ciReport{}
	}
	gh, err := e.installationClient(ctx, repo)
	if err != nil {
		return ciReport{text: "host: the failed jobs' logs are unavailable: " + e.deps.Scrubber.Scrub(err.Error()) + "\n"}
	}
	var jobs []*githubapp.WorkflowJob
	if runID != 0 {
		list, err := gh.WorkflowJobs(ctx, runID)
		if err != nil {
			return ciReport{text: fmt.Sprintf("host: the jobs of workflow run %d are unavailable: %s\n", runID, e.deps.Scrubber.Scrub(err.Error()))}
		}
		for _, j := range list {
			if (jobID != 0 && j.GetID() == jobID) || (jobID == 0 && failedJob(j.GetConclusion())) {
				jobs = append(jobs, j)
			}
		}
	} else {
		jobs = []*githubapp.WorkflowJob{{ID: &jobID}}
	}
	if len(jobs) == 0 {
		return ciReport{text: fmt.Sprintf("host: workflow run %d has no failed job to show.\n", runID)}
	}
	var out ciReport
	var b strings.Builder
	if len(jobs) > maxFailedJobs {
		fmt.Fprintf(&b, "host: %d jobs failed; the first %d are shown.\n", len(jobs), maxFailedJobs)
		jobs = jobs[:maxFailedJobs]
	}
	for _, j := range jobs {
		if out.head == "" {
			out.head = j.GetHeadSHA()
		}
		b.WriteString(e.jobExcerpt(ctx, gh, j, maxExcerpt/len(jobs)))
	}
	out.text = b.String()
	return out
}

// jobExcerpt is one failed job's part: its name, the step that failed, and
// the end of its log from that step on, without GitHub's timestamps and
// scrubbed of secrets.
func (e *Executor) jobExcerpt(ctx context.Context, gh *githubapp.Repo, j *githubapp.WorkflowJob, limit int) string {
	step := ""
	for _, s := range j.Steps {
		if failedJob(s.GetConclusion()) {
			step = s.GetName()
			break
		}
	}
	var b strings.Builder
	b.WriteString("host: ")
	if j.GetName() != "" {
		fmt.Fprintf(&b, "job %q", j.GetName())
	} else {
		fmt.Fprintf(&b, "job %d", j.GetID())
	}
	if j.GetRunID() != 0 {
		fmt.Fprintf(&b, " of workflow run %d", j.GetRunID())
	}
	if step != "" {
		fmt.Fprintf(&b, " failed at step %q", step)
	}
	log, err := gh.JobLogs(ctx, j.GetID(), 8<<20)
	if err != nil {
		fmt.Fprintf(&b, "; its log is unavailable: %s\n", e.deps.Scrubber.Scrub(err.Error()))
		return b.String()
	}
	log = logStamp.ReplaceAllString(log, "")
	if step != "" {
		// Actions opens each step's section with "##[group]<step name>".
		if i := strings.LastIndex(log, "##[group]"+step); i >= 0 {
			log = log[i:]
		}
	}
	if len(log) > limit {
		log = "…" + log[len(log)-limit:]
	}
	log = secret.ScrubShapes(e.deps.Scrubber.Scrub(strings.TrimRight(log, "\n")))
	fence := "```"
	for strings.Contains(log, fence) {
		fence += "`"
	}
	fmt.Fprintf(&b, "; its log ends with (outside data):\n%s\n%s\n%s\n", fence, log, fence)
	return b.String()
}
