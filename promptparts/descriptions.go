package promptparts

// descriptions say in one line what each built-in part is for, as the
// panel's parts list shows it.
var descriptions = map[string]string{
	KeyShared:              "What superagent is and how the team works with it; every Session reads it first.",
	KeyOrchestrator:        "The main Session's role: route each card to one Ticket, a new one, or none.",
	KeyWorker:              "An Executor Session's role: carry one Ticket from request to delivery on its own.",
	KeySubscriptions:       "How Tickets follow Threads, and which later cards reach an Executor.",
	KeyReplies:             "Who writes to people, when, and how replies are kept short.",
	KeyDispatch:            "How the main Session runs a turn: read, decide, record.",
	KeyWork:                "How an Executor carries its Ticket: read, change, verify, report.",
	KeyAdmission:           "Which cards may become Tickets without anyone asking the bot.",
	KeyHandoffOrchestrator: "The summary the main Session writes when its conversation rolls over.",
	KeyHandoffWorker:       "The summary an Executor writes when its conversation rolls over.",
	KeySkillFeishu:         "Working knowledge of Feishu chats, threads and cards, loaded when needed.",
	KeySkillGitHub:         "Working knowledge of GitHub issues, pull requests, reviews and checks, loaded when needed.",
	KeyEnvironment:         "Template: the deployment's and the Ticket's facts, filled in by the host.",
	KeyPolicy:              "Template: the accept mode and the enabled rules for inferred work.",
	KeyPolicyNone:          "Template: the Policy section when no rule is enabled (nothing is inferred).",
	KeyCoding:              "The Executor's coding practice: understand, change, test, commit, push.",
}

// Describe returns the one-line description of the part with key, or ""
// for a part without one.
func Describe(key string) string { return descriptions[key] }
