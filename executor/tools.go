package executor

import (
	"context"
	"errors"
	"strings"
	"unicode"

	"github.com/superagent-dev/superagent/outbox"
	"github.com/superagent-dev/superagent/session"
)

// Tool names of an Executor Session (docs/tools.md#executor-session).
const (
	ToolRunCommand     = "run_command"
	ToolReadFile       = "read_file"
	ToolWriteFile      = "write_file"
	ToolEditFile       = "edit_file"
	ToolSearchCode     = "search_code"
	ToolGitStatus      = "git_status"
	ToolGitDiff        = "git_diff"
	ToolGitCommit      = "git_commit"
	ToolGitPush        = "git_push"
	ToolPROpen         = "pr_open"
	ToolPRUpdate       = "pr_update"
	ToolPRClose        = "pr_close"
	ToolPRMerge        = "pr_merge"
	ToolReply          = "reply"
	ToolReact          = "react"
	ToolReviewReply    = "review_reply"
	ToolReviewResolve  = "review_resolve"
	ToolGitHubRead     = "github_read"
	ToolSubscribe      = "thread_subscribe"
	ToolUnrelated      = "orchestrator_thread_unrelated"
	ToolReport         = "report"
	ToolHandBack       = "hand_back"
	ToolHumanAction    = "human_action"
	ToolPromptsRead    = "prompts_read"
	ToolSkillLoad      = "skill_load"
	ToolPRReview       = "pr_review"
	maxGitHubBodyChars = 65000
)

// registry builds an Executor Session's tools. None asks a person, shows
// UI or changes the Executor's own profile: it works unattended. The tools
// that change files, run commands or write to people are Progress: a new
// successful call of one resets the Session's stall count. extra are
// more tools (the repository's MCP servers').
func (e *Executor) registry(extra ...session.Tool) (*session.Registry, error) {
	if e.local() {
		// A checkout of this machine needs no checkpoint: the workspace
		// stays here, and a hidden ref would land in the person's
		// repository.
		tools := append(onlyLocal(e.tools()), extra...)
		for i := range tools {
			tools[i] = e.metrics.counted(tools[i])
		}
		return session.NewRegistry(tools...)
	}
	tools := append(e.tools(), extra...)
	for i := range tools {
		tools[i] = e.metrics.counted(e.checkpointed(tools[i]))
	}
	return session.NewRegistry(tools...)
}

// tools declares an Executor Session's tools; each argument type, beside
// its handler, is the schema the model reads.
func (e *Executor) tools() []session.Tool {
	return []session.Tool{
		session.Spec[runArgs]{Name: ToolRunCommand, Progress: true, Handler: inWorkspace(e, e.runCommand),
			Description: "Run a shell command in the Ticket's workspace, isolated from the service: no service secrets, no network unless the deployment allows it. Output is capped; a non-zero exit is reported, not an error."}.Tool(),
		session.Spec[readArgs]{Name: ToolReadFile, Idempotent: true, Handler: inWorkspace(e, e.readFile),
			Description: "Read a text file of the workspace, with line numbers."}.Tool(),
		session.Spec[writeArgs]{Name: ToolWriteFile, Progress: true, Idempotent: true, Handler: inWorkspace(e, e.writeFile),
			Description: "Write a whole file of the workspace (parents are created)."}.Tool(),
		session.Spec[editArgs]{Name: ToolEditFile, Progress: true, Handler: inWorkspace(e, e.editFile),
			Description: "Replace text in a workspace file: old_text must occur exactly once unless replace_all."}.Tool(),
		session.Spec[searchArgs]{Name: ToolSearchCode, Idempotent: true, Handler: inWorkspace(e, e.searchCode),
			Description: "Search the workspace's text files for a regular expression (RE2)."}.Tool(),
		session.Spec[screenshotArgs]{Name: ToolScreenshot, Progress: true, Handler: inWorkspace(e, e.screenshot),
			Description: screenshotDescription}.Tool(),
		session.Spec[noArgs]{Name: ToolGitStatus, Idempotent: true, Handler: inWorkspace(e, e.gitStatus),
			Description: "The workspace's git status."}.Tool(),
		session.Spec[diffArgs]{Name: ToolGitDiff, Idempotent: true, Handler: inWorkspace(e, e.gitDiff),
			Description: "The workspace's diff (of the index when staged)."}.Tool(),
		session.Spec[commitArgs]{Name: ToolGitCommit, Progress: true, Handler: inWorkspace(e, e.gitCommit),
			Description: "Commit the given paths (all changes when none) as the team's commit author."}.Tool(),
		session.Spec[noArgs]{Name: ToolGitPush, Progress: true, Idempotent: true, Check: e.checkPush, Handler: inWorkspace(e, e.gitPush),
			Description: "Push the Ticket's branch. Only after the confirmation, only to a repository the Mandate names."}.Tool(),
		session.Spec[prOpenArgs]{Name: ToolPROpen, Progress: true, Idempotent: true, Check: e.checkPROpen, Handler: e.prOpen,
			Description: "Open the Ticket's pull request from its pushed branch, always as a draft. Only after the confirmation."}.Tool(),
		session.Spec[prUpdateArgs]{Name: ToolPRUpdate, Progress: true, Idempotent: true, Handler: e.prUpdate,
			Description: "Update the Ticket's pull request; ready: true marks it ready for review and needs the evidence the Delivery requirements ask for (the host checks)."}.Tool(),
		session.Spec[prCloseArgs]{Name: ToolPRClose, Progress: true, Idempotent: true, Handler: e.prClose,
			Description: "Close the Ticket's pull request to yield to a person's work: one sentence of reason and a pointer to theirs."}.Tool(),
		session.Spec[noArgs]{Name: ToolPRMerge, Progress: true, Idempotent: true, Handler: e.prMerge,
			Description: "Merge the Ticket's pull request, only when the Delivery requirements' auto-merge condition holds (the host checks it)."}.Tool(),
		session.Spec[replyArgs]{Name: ToolReply, Progress: true, Idempotent: true, Check: e.checkReply, Handler: e.reply,
			Description: "Write in a Thread the Ticket follows, under the message that asked (in_reply_to: its card id). GitHub messages get the team's agent line; chat messages are at most 100 words."}.Tool(),
		session.Spec[reactArgs]{Name: ToolReact, Progress: true, Idempotent: true, Handler: e.react,
			Description: "React to a message (card id) in a followed Thread: GitHub reactions (+1, -1, laugh, confused, heart, hooray, rocket, eyes) or a Feishu emoji type."}.Tool(),
		session.Spec[prReviewArgs]{Name: ToolPRReview, Progress: true, Idempotent: true, Check: e.checkPRReview, Handler: e.prReview,
			Description: "Post the one review a person asked for on their pull request: a body and inline comments on lines of its diff (path, line, side RIGHT or LEFT), a ```suggestion block where you have a concrete fix; event COMMENT unless the policy allows more. A comment off the diff refuses the whole review, saying where it may go."}.Tool(),
		session.Spec[reviewReplyArgs]{Name: ToolReviewReply, Progress: true, Idempotent: true, Handler: e.reviewReply,
			Description: "Reply to a review comment on the Ticket's pull request. A decline is one sentence of reason."}.Tool(),
		session.Spec[reviewResolveArgs]{Name: ToolReviewResolve, Progress: true, Idempotent: true, Handler: e.reviewResolve,
			Description: "Resolve a review thread of the Ticket's pull request (its GraphQL id, from github_read what=review_threads)."}.Tool(),
		session.Spec[githubReadArgs]{Name: ToolGitHubRead, Idempotent: true, Handler: e.githubRead,
			Description: "Read from GitHub (read-only): an issue, a pull request (with its files), a conversation, the review threads or the checks of a pull request; or the full text of a card (what=card, id)."}.Tool(),
		session.Spec[threadArgs]{Name: ToolSubscribe, Idempotent: true, Handler: e.subscribe,
			Description: "Follow a related Thread for context (owner/repo#12 or a thread key). It grants no authority: the Ticket may not write there."}.Tool(),
		session.Spec[threadArgs]{Name: ToolUnrelated, Progress: true, Idempotent: true, Handler: e.unrelated,
			Description: "Mark a Thread attached to the Ticket as unrelated: the Ticket stops following it and hands back what it holds from there. Nothing is posted there."}.Tool(),
		session.Spec[reportArgs]{Name: ToolReport, Progress: true, Check: e.checkReport, Handler: e.report,
			Description: "Report to the main Session when the Ticket's state changes: progress, done, blocked or waiting, with a summary and at most one human_action question. A done report states what was delivered and how it was verified; the host adds the Ticket's token use and cost."}.Tool(),
		session.Spec[handBackArgs]{Name: ToolHandBack, Progress: true, Idempotent: true, Handler: e.handBack,
			Description: "Hand back a message (card id) that is beyond this Ticket, with the reason; it goes back to the main Session once every Ticket it reached has handed it back or ended."}.Tool(),
		session.Spec[humanActionArgs]{Name: ToolHumanAction, Progress: true, Check: e.checkHumanAction, Handler: e.humanAction,
			Description: "Ask a person one concrete question only a person can answer. It is asked under message (a card id) if given, else in the Ticket's original conversation. Authorized work can continue meanwhile."}.Tool(),
		session.Spec[repositorySetArgs]{Name: ToolRepositorySet, Progress: true, Idempotent: true, Handler: e.repositorySet,
			Description: "Set the repository of a Ticket that has none, once, after a person named it: message is the card id of their message " +
				"(usually their answer to your human_action question). The host checks that the person who asked for the Ticket may have work done " +
				"there, then clones it and runs its setup, so your workspace and GitHub tools work for the rest of the Session. " +
				"A refusal says why and sets nothing; never try repositories in turn, ask."}.Tool(),
		session.Spec[promptsReadArgs]{Name: ToolPromptsRead, Idempotent: true, Handler: e.promptsRead,
			Description: "Read the prompt of a revision this Ticket's Sessions worked under."}.Tool(),
		session.Spec[skillArgs]{Name: ToolSkillLoad, Idempotent: true, Handler: e.skill,
			Description: "Load a skill: the team's skills and skill/github, skill/feishu."}.Tool(),
	}
}

// noArgs are the arguments of a tool that takes none: {}.
type noArgs struct{}

// sentences counts the sentences of a text: runs ending in . ! ? (or
// their full-width forms) or the end of the text. A run of terminators
// ends one sentence ("Really?!"), closing quotes and brackets after one
// belong to its sentence, and a dot inside a word (a file name, a
// version) or before a lowercase word (e.g., i.e., an ellipsis that goes
// on) ends nothing.
func sentences(s string) int {
	const closers = "\"')]}’”»」』"
	n := 0
	inSentence := false
	runes := []rune(strings.TrimSpace(s))
	for i, r := range runes {
		end := r == '.' || r == '!' || r == '?' || r == '。' || r == '！' || r == '？'
		if !end {
			if !unicode.IsSpace(r) && !strings.ContainsRune(closers, r) {
				inSentence = true
			}
			continue
		}
		if r == '.' {
			j := i + 1
			for j < len(runes) && strings.ContainsRune(closers, runes[j]) {
				j++
			}
			if j < len(runes) && !unicode.IsSpace(runes[j]) {
				continue
			}
			for j < len(runes) && unicode.IsSpace(runes[j]) {
				j++
			}
			if j < len(runes) && unicode.IsLower(runes[j]) {
				continue
			}
		}
		if inSentence {
			n++
			inSentence = false
		}
	}
	if inSentence {
		n++
	}
	return n
}

// agentLine is the line that begins every GitHub message (see
// outbox.AgentLine).
func (e *Executor) agentLine(ctx context.Context) (string, error) {
	return outbox.AgentLine(ctx, e.deps.Prompts)
}

type promptsReadArgs struct {
	Revision int64 `json:"revision"`
}

// promptsRead returns the prompt of a revision the Ticket worked under.
func (e *Executor) promptsRead(ctx context.Context, call session.Call, a promptsReadArgs) (string, error) {
	used, err := e.sessions.Store().UsedRevision(ctx, e.deps.DB, call.TicketID, a.Revision)
	if err != nil {
		return "", err
	}
	if !used {
		return "", session.Refuse("this Ticket's Sessions never worked under revision %d", a.Revision)
	}
	in, err := e.promptInput(ctx, call.TicketID)
	if err != nil {
		return "", err
	}
	prompt, _, err := e.deps.Prompts.AssembleAt(ctx, a.Revision, in)
	return prompt, err
}

type skillArgs struct {
	Name string `json:"name"`
}

func (e *Executor) skill(ctx context.Context, _ session.Call, a skillArgs) (string, error) {
	text, _, ok, err := e.deps.Prompts.Skill(ctx, a.Name)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", session.Refuse("there is no skill %q", a.Name)
	}
	return text, nil
}

var errNoRepo = errors.New("this Ticket has no repository")
