package executor

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"unicode"

	"github.com/superagent-dev/superagent/outbox"
	"github.com/superagent-dev/superagent/session"
)

// Tool names of an Executor Session (docs/tools.md; SPEC §12 fixes
// human_action, orchestrator_thread_unrelated, report and hand_back).
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
	maxGitHubBodyChars = 65000
)

func schema(properties string, required ...string) json.RawMessage {
	req, _ := json.Marshal(required)
	if len(required) == 0 {
		req = []byte("[]")
	}
	return json.RawMessage(`{"type":"object","properties":{` + properties + `},"required":` + string(req) + `,"additionalProperties":false}`)
}

// registry builds an Executor Session's tools. None asks a person, shows
// UI or changes the Executor's own profile: it works unattended.
func (e *Executor) registry() (*session.Registry, error) {
	tools := e.tools()
	for i := range tools {
		tools[i] = e.metrics.counted(tools[i])
	}
	return session.NewRegistry(tools...)
}

func (e *Executor) tools() []session.Tool {
	return []session.Tool{
		{Name: ToolRunCommand, Handler: inWorkspace(e, e.runCommand),
			Description: "Run a shell command in the Ticket's workspace, isolated from the service: no service secrets, no network unless the deployment allows it. Output is capped; a non-zero exit is reported, not an error.",
			Parameters:  schema(`"command":{"type":"string"},"timeout_seconds":{"type":"integer","minimum":1,"maximum":1800,"description":"default 120"},"workdir":{"type":"string","description":"relative to the workspace root"}`, "command")},
		{Name: ToolReadFile, Idempotent: true, Handler: inWorkspace(e, e.readFile),
			Description: "Read a text file of the workspace, with line numbers.",
			Parameters:  schema(`"path":{"type":"string"},"offset":{"type":"integer","minimum":0,"description":"first line, 1-based"},"limit":{"type":"integer","minimum":0}`, "path")},
		{Name: ToolWriteFile, Idempotent: true, Handler: inWorkspace(e, e.writeFile),
			Description: "Write a whole file of the workspace (parents are created).",
			Parameters:  schema(`"path":{"type":"string"},"content":{"type":"string"}`, "path", "content")},
		{Name: ToolEditFile, Handler: inWorkspace(e, e.editFile),
			Description: "Replace text in a workspace file: old_text must occur exactly once unless replace_all.",
			Parameters:  schema(`"path":{"type":"string"},"old_text":{"type":"string"},"new_text":{"type":"string"},"replace_all":{"type":"boolean"}`, "path", "old_text", "new_text")},
		{Name: ToolSearchCode, Idempotent: true, Handler: inWorkspace(e, e.searchCode),
			Description: "Search the workspace's text files for a regular expression (RE2).",
			Parameters:  schema(`"pattern":{"type":"string"},"path":{"type":"string","description":"directory or file; default the root"}`, "pattern")},
		{Name: ToolGitStatus, Idempotent: true, Handler: inWorkspace(e, e.gitStatus),
			Description: "The workspace's git status.", Parameters: schema(``)},
		{Name: ToolGitDiff, Idempotent: true, Handler: inWorkspace(e, e.gitDiff),
			Description: "The workspace's diff (of the index when staged).", Parameters: schema(`"staged":{"type":"boolean"}`)},
		{Name: ToolGitCommit, Handler: inWorkspace(e, e.gitCommit),
			Description: "Commit the given paths (all changes when none) as the team's commit author.",
			Parameters:  schema(`"message":{"type":"string"},"paths":{"type":"array","items":{"type":"string"}}`, "message")},
		{Name: ToolGitPush, Idempotent: true, Check: e.checkPush, Handler: inWorkspace(e, e.gitPush),
			Description: "Push the Ticket's branch. Only after the confirmation, only to a repository the Mandate names.",
			Parameters:  schema(``)},
		{Name: ToolPROpen, Idempotent: true, Check: e.checkPROpen, Handler: e.prOpen,
			Description: "Open the Ticket's pull request from its pushed branch, always as a draft. Only after the confirmation.",
			Parameters:  schema(`"title":{"type":"string"},"body":{"type":"string","description":"what changed, why, how it was verified, what is unfinished"}`, "title", "body")},
		{Name: ToolPRUpdate, Idempotent: true, Handler: e.prUpdate,
			Description: "Update the Ticket's pull request; ready: true marks it ready for review and needs the evidence the Delivery requirements ask for (the host checks).",
			Parameters:  schema(`"title":{"type":"string"},"body":{"type":"string"},"ready":{"type":"boolean"}`)},
		{Name: ToolPRClose, Idempotent: true, Handler: e.prClose,
			Description: "Close the Ticket's pull request to yield to a person's work: one sentence of reason and a pointer to theirs.",
			Parameters:  schema(`"reason":{"type":"string"},"pointer":{"type":"string","description":"their pull request or branch: owner/repo#12, a URL, or a branch name"}`, "reason", "pointer")},
		{Name: ToolPRMerge, Idempotent: true, Handler: e.prMerge,
			Description: "Merge the Ticket's pull request, only when the Delivery requirements' auto-merge condition holds (the host checks it).",
			Parameters:  schema(``)},
		{Name: ToolReply, Idempotent: true, Check: e.checkReply, Handler: e.reply,
			Description: "Write in a Thread the Ticket follows, under the message that asked (in_reply_to: its card id). GitHub messages get the team's agent line; chat messages are at most 100 words.",
			Parameters:  schema(`"thread":{"type":"string","description":"thread key; optional when in_reply_to is given"},"purpose":{"type":"string","enum":["confirm","result","answer","decline","yield"]},"text":{"type":"string"},"in_reply_to":{"type":"integer","description":"the card id of the message answered"}`, "purpose", "text")},
		{Name: ToolReact, Idempotent: true, Handler: e.react,
			Description: "React to a message (card id) in a followed Thread: GitHub reactions (+1, -1, laugh, confused, heart, hooray, rocket, eyes) or a Feishu emoji type.",
			Parameters:  schema(`"thread":{"type":"string"},"message":{"type":"integer"},"reaction":{"type":"string"}`, "message", "reaction")},
		{Name: ToolReviewReply, Idempotent: true, Handler: e.reviewReply,
			Description: "Reply to a review comment on the Ticket's pull request. A decline is one sentence of reason.",
			Parameters:  schema(`"comment":{"type":"integer","description":"the review comment id"},"text":{"type":"string"},"purpose":{"type":"string","enum":["answer","decline"]}`, "comment", "text")},
		{Name: ToolReviewResolve, Idempotent: true, Handler: e.reviewResolve,
			Description: "Resolve a review thread of the Ticket's pull request (its GraphQL id, from github_read what=review_threads).",
			Parameters:  schema(`"thread":{"type":"string"}`, "thread")},
		{Name: ToolGitHubRead, Idempotent: true, Handler: e.githubRead,
			Description: "Read from GitHub (read-only): an issue, a pull request (with its files), a conversation, the review threads or the checks of a pull request; or the full text of a card (what=card, id).",
			Parameters:  schema(`"what":{"type":"string","enum":["issue","pull_request","thread","review_threads","checks","card"]},"number":{"type":"integer"},"repo":{"type":"string","description":"owner/name; default the Ticket's"},"id":{"type":"integer"}`, "what")},
		{Name: ToolSubscribe, Idempotent: true, Handler: e.subscribe,
			Description: "Follow a related Thread for context (owner/repo#12 or a thread key). It grants no authority: the Ticket may not write there.",
			Parameters:  schema(`"thread":{"type":"string"},"reason":{"type":"string"}`, "thread", "reason")},
		{Name: ToolUnrelated, Idempotent: true, Handler: e.unrelated,
			Description: "Mark a Thread attached to the Ticket as unrelated: the Ticket stops following it and hands back what it holds from there. Nothing is posted there.",
			Parameters:  schema(`"thread":{"type":"string"},"reason":{"type":"string"}`, "thread", "reason")},
		{Name: ToolReport, Check: e.checkReport, Handler: e.report,
			Description: "Report to the main Session when the Ticket's state changes: progress, done, blocked or waiting, with a summary and at most one human_action question. A done report states what was delivered and how it was verified; the host adds the Ticket's token use and cost.",
			Parameters:  schema(`"state":{"type":"string","enum":["progress","done","blocked","waiting"]},"summary":{"type":"string"},"human_action":{"type":"string"},"message":{"type":"integer","description":"card id under which to ask human_action"}`, "state", "summary")},
		{Name: ToolHandBack, Idempotent: true, Handler: e.handBack,
			Description: "Hand back a message (card id) that is beyond this Ticket, with the reason; it goes back to the main Session once every Ticket it reached has handed it back or ended.",
			Parameters:  schema(`"message":{"type":"integer"},"reason":{"type":"string"}`, "message", "reason")},
		{Name: ToolHumanAction, Check: e.checkHumanAction, Handler: e.humanAction,
			Description: "Ask a person one concrete question only a person can answer. It is asked under message (a card id) if given, else in the Ticket's original conversation. Authorized work can continue meanwhile.",
			Parameters:  schema(`"question":{"type":"string"},"message":{"type":"integer"}`, "question")},
		{Name: ToolPromptsRead, Idempotent: true, Handler: e.promptsRead,
			Description: "Read the prompt of a revision this Ticket's Sessions worked under.",
			Parameters:  schema(`"revision":{"type":"integer"}`, "revision")},
		{Name: ToolSkillLoad, Idempotent: true, Handler: e.skill,
			Description: "Load a skill: the team's skills and skill/github, skill/feishu.",
			Parameters:  schema(`"name":{"type":"string"}`, "name")},
	}
}

func bind[T any](call session.Call) (T, error) {
	var v T
	err := call.Bind(&v)
	return v, err
}

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

// promptsRead returns the prompt of a revision the Ticket worked under.
func (e *Executor) promptsRead(ctx context.Context, call session.Call) (string, error) {
	a, err := bind[struct {
		Revision int64 `json:"revision"`
	}](call)
	if err != nil {
		return "", err
	}
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

func (e *Executor) skill(ctx context.Context, call session.Call) (string, error) {
	a, err := bind[struct {
		Name string `json:"name"`
	}](call)
	if err != nil {
		return "", err
	}
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
