package github

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ReviewCommentSpec describes a pull request review comment
// (AddReviewComment).
type ReviewCommentSpec struct {
	// Login is the author, a person or a bot such as "reviewer[bot]".
	Login string
	Body  string
	// Path and Line place the comment on the diff; a reply takes its
	// thread's.
	Path string
	Line int
	// InReplyTo is a review comment id: the comment joins its thread
	// instead of starting one.
	InReplyTo int64
	// ReviewID attaches the comment to a review from AddReview; by default
	// it gets a COMMENTED review of its own, as on GitHub.
	ReviewID int64
}

// ReviewThread is a snapshot of a review thread.
type ReviewThread struct {
	// ID is the GraphQL node id, PRRT_<n>.
	ID       string
	Resolved bool
	Path     string
	Line     int
	Comments []ThreadComment
}

// ThreadComment is one comment of a ReviewThread, oldest first.
type ThreadComment struct {
	ID    int64
	Login string
	Body  string
}

type review struct {
	id                 int64
	pr                 int
	login, state, body string
	submitted          time.Time
}

type reviewComment struct {
	id, reviewID, inReplyTo int64
	pr                      int
	login, body, path       string
	line                    int
	side                    string
	created                 time.Time
	thread                  *thread
}

type thread struct {
	id       string
	pr       int
	resolved bool
	comments []*reviewComment
}

// AddReview adds a submitted review by login on pull request pr of
// fullName in state APPROVED, CHANGES_REQUESTED or COMMENTED and returns
// its id.
func (s *Server) AddReview(fullName string, pr int, login, state string) int64 {
	return s.AddReviewBody(fullName, pr, login, state, "")
}

// AddReviewBody is AddReview with the review's body.
func (s *Server) AddReviewBody(fullName string, pr int, login, state, body string) int64 {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return s.st.addReview(s.st.repo(fullName), pr, login, state, body).id
}

func (st *store) addReview(rp *repo, pr int, login, state, body string) *review {
	rv := &review{id: st.id(), pr: pr, login: login, state: state, body: body, submitted: time.Now().UTC().Truncate(time.Second)}
	rp.reviews = append(rp.reviews, rv)
	return rv
}

// Review is a snapshot of a submitted review.
type Review struct {
	ID                 int64
	Login, State, Body string
}

// Reviews lists the reviews of pull request pr of fullName, oldest first.
func (s *Server) Reviews(fullName string, pr int) []Review {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	rp := s.st.repos[strings.ToLower(fullName)]
	if rp == nil {
		return nil
	}
	var out []Review
	for _, rv := range rp.reviews {
		if rv.pr == pr {
			out = append(out, Review{ID: rv.id, Login: rv.login, State: rv.state, Body: rv.body})
		}
	}
	return out
}

// AddReviewComment adds a review comment on pull request pr of fullName and
// returns its id and its thread's GraphQL node id. It panics if InReplyTo
// names no comment of pr.
func (s *Server) AddReviewComment(fullName string, pr int, c ReviewCommentSpec) (commentID int64, threadID string) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	rc, err := s.st.addReviewComment(s.st.repo(fullName), pr, c)
	if err != nil {
		panic("fake GitHub: " + err.Error())
	}
	return rc.id, rc.thread.id
}

func (st *store) addReviewComment(rp *repo, pr int, c ReviewCommentSpec) (*reviewComment, error) {
	rc := &reviewComment{id: st.id(), pr: pr, login: c.Login, body: c.Body, path: c.Path, line: c.Line, created: time.Now().UTC().Truncate(time.Second)}
	if c.InReplyTo != 0 {
		parent := rp.reviewComment(pr, c.InReplyTo)
		if parent == nil {
			return nil, fmt.Errorf("no review comment %d on %s#%d", c.InReplyTo, rp.fullName, pr)
		}
		rc.thread = parent.thread
		rc.inReplyTo = rc.thread.comments[0].id
		rc.path, rc.line = parent.path, parent.line
	} else {
		st.nextNode++
		rc.thread = &thread{id: "PRRT_" + strconv.Itoa(st.nextNode), pr: pr}
		rp.threads = append(rp.threads, rc.thread)
	}
	rc.reviewID = c.ReviewID
	if rc.reviewID == 0 {
		rc.reviewID = st.addReview(rp, pr, c.Login, "COMMENTED", "").id
	}
	rc.thread.comments = append(rc.thread.comments, rc)
	rp.comments = append(rp.comments, rc)
	return rc, nil
}

func (r *repo) reviewComment(pr int, id int64) *reviewComment {
	for _, c := range r.comments {
		if c.id == id && c.pr == pr {
			return c
		}
	}
	return nil
}

// ReviewThreads returns the review threads of pull request pr of fullName,
// oldest first.
func (s *Server) ReviewThreads(fullName string, pr int) []ReviewThread {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	rp := s.st.repos[strings.ToLower(fullName)]
	if rp == nil {
		return nil
	}
	var out []ReviewThread
	for _, th := range rp.threads {
		if th.pr == pr {
			out = append(out, th.snapshot())
		}
	}
	return out
}

func (th *thread) snapshot() ReviewThread {
	rt := ReviewThread{ID: th.id, Resolved: th.resolved, Path: th.comments[0].path, Line: th.comments[0].line}
	for _, c := range th.comments {
		rt.Comments = append(rt.Comments, ThreadComment{ID: c.id, Login: c.login, Body: c.body})
	}
	return rt
}

func (s *Server) serveReviews() {
	s.mux.HandleFunc("GET /repos/{owner}/{repo}/pulls/{number}/comments", s.listReviewComments)
	s.mux.HandleFunc("POST /repos/{owner}/{repo}/pulls/{number}/comments", s.createReviewComment)
	s.mux.HandleFunc("POST /repos/{owner}/{repo}/pulls/{number}/comments/{id}/replies", s.replyReviewComment)
	s.mux.HandleFunc("GET /repos/{owner}/{repo}/pulls/{number}/reviews", s.listReviews)
	s.mux.HandleFunc("POST /repos/{owner}/{repo}/pulls/{number}/reviews", s.createReview)
}

// reviewCommentJSON is a review comment, from the published example.
func (s *Server) reviewCommentJSON(rp *repo, c *reviewComment) map[string]any {
	id := strconv.FormatInt(c.id, 10)
	api := s.URL + "/repos/" + rp.fullName
	html := "https://github.com/" + rp.fullName + "/pull/" + strconv.Itoa(c.pr) + "#discussion_r" + id
	out := overlay(s.canned("pull-request-review-comment"), map[string]any{
		"id": c.id, "node_id": "PRRC_" + id, "body": c.body, "user": s.userJSON(c.login),
		"path": c.path, "line": c.line, "original_line": c.line, "side": cmp.Or(c.side, "RIGHT"),
		"start_line": nil, "original_start_line": nil, "start_side": nil, "position": c.line, "original_position": c.line,
		"subject_type":           "line",
		"author_association":     "NONE",
		"pull_request_review_id": c.reviewID,
		"created_at":             c.created.Format(time.RFC3339), "updated_at": c.created.Format(time.RFC3339),
		"html_url":         html,
		"url":              api + "/pulls/comments/" + id,
		"pull_request_url": api + "/pulls/" + strconv.Itoa(c.pr),
		"_links": map[string]any{"html": map[string]any{"href": html}, "pull_request": map[string]any{"href": api + "/pulls/" + strconv.Itoa(c.pr)},
			"self": map[string]any{"href": api + "/pulls/comments/" + id}},
		"commit_id": "", "original_commit_id": "",
	})
	delete(out, "in_reply_to_id")
	if c.inReplyTo != 0 {
		out["in_reply_to_id"] = c.inReplyTo
	}
	if p := rp.pulls[c.pr]; p != nil {
		out["commit_id"], out["original_commit_id"] = p.HeadSHA, p.HeadSHA
	}
	return out
}

// prRoute authorizes r and finds the repository, locking st.mu, which the
// caller must unlock when ok. Unlike pullRoute the pull request need not
// be one the fake opened: AddReviewComment takes any number.
func (s *Server) prRoute(w http.ResponseWriter, r *http.Request) (*repo, int, bool) {
	if _, ok := s.Authorize(w, r); !ok {
		return nil, 0, false
	}
	n, err := strconv.Atoi(r.PathValue("number"))
	s.st.mu.Lock()
	rp := s.st.lookup(r)
	if rp == nil || err != nil {
		s.st.mu.Unlock()
		WriteError(w, http.StatusNotFound, "Not Found")
		return nil, 0, false
	}
	return rp, n, true
}

func (s *Server) listReviewComments(w http.ResponseWriter, r *http.Request) {
	rp, n, ok := s.prRoute(w, r)
	if !ok {
		return
	}
	defer s.st.mu.Unlock()
	out := []map[string]any{}
	for _, c := range rp.comments {
		if c.pr == n {
			out = append(out, s.reviewCommentJSON(rp, c))
		}
	}
	WriteJSON(w, http.StatusOK, paginate(w, r, out))
}

// createReviewComment is the bot commenting on the diff ({body, path,
// line}) or replying ({body, in_reply_to}, go-github's
// CreateCommentInReplyTo).
func (s *Server) createReviewComment(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Body      string `json:"body"`
		Path      string `json:"path"`
		Line      int    `json:"line"`
		InReplyTo int64  `json:"in_reply_to"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Body == "" || (body.InReplyTo == 0 && body.Path == "") {
		if _, ok := s.Authorize(w, r); ok {
			WriteError(w, http.StatusUnprocessableEntity, "Validation Failed")
		}
		return
	}
	s.addBotReviewComment(w, r, ReviewCommentSpec{Body: body.Body, Path: body.Path, Line: body.Line, InReplyTo: body.InReplyTo})
}

// replyReviewComment answers POST .../pulls/{number}/comments/{id}/replies.
func (s *Server) replyReviewComment(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Body string `json:"body"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Body == "" {
		if _, ok := s.Authorize(w, r); ok {
			WriteError(w, http.StatusUnprocessableEntity, "Validation Failed")
		}
		return
	}
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	s.addBotReviewComment(w, r, ReviewCommentSpec{Body: body.Body, InReplyTo: id})
}

func (s *Server) addBotReviewComment(w http.ResponseWriter, r *http.Request, spec ReviewCommentSpec) {
	rp, n, ok := s.prRoute(w, r)
	if !ok {
		return
	}
	defer s.st.mu.Unlock()
	spec.Login = s.botLogin()
	c, err := s.st.addReviewComment(rp, n, spec)
	if err != nil {
		WriteError(w, http.StatusNotFound, "Not Found")
		return
	}
	WriteJSON(w, http.StatusCreated, s.reviewCommentJSON(rp, c))
}

// reviewStates maps the events of POST .../reviews to review states.
var reviewStates = map[string]string{"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED", "": "PENDING"}

// createReview is the bot submitting a review, with its comments each
// starting a thread. A comment is placed by line and side (RIGHT, the
// default, or LEFT) and, like GitHub, the fake refuses the whole review
// (422, nothing stored) when one names a file the pull request does not
// change or a line outside that file's hunks; a review on a pull request
// the fake did not open (AddReviewComment's) is taken as it is.
func (s *Server) createReview(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Body     string `json:"body"`
		Event    string `json:"event"`
		Comments []struct {
			Path string `json:"path"`
			Line int    `json:"line"`
			Side string `json:"side"`
			Body string `json:"body"`
		} `json:"comments"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		if _, ok := s.Authorize(w, r); ok {
			WriteError(w, http.StatusBadRequest, "Problems parsing JSON")
		}
		return
	}
	state, known := reviewStates[body.Event]
	rp, n, ok := s.prRoute(w, r)
	if !ok {
		return
	}
	defer s.st.mu.Unlock()
	if !known {
		WriteError(w, http.StatusUnprocessableEntity, "Validation Failed")
		return
	}
	if p := rp.pulls[n]; p != nil && rp.dir != "" {
		var problems []string
		for _, c := range body.Comments {
			if msg := hunkLine(filePatch(rp.dir, p.baseSHA, p.HeadSHA, c.Path), c.Line, c.Side); msg != "" {
				problems = append(problems, msg)
			}
		}
		if len(problems) > 0 {
			WriteJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Unprocessable Entity",
				"errors": problems, "documentation_url": "https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request"})
			return
		}
	}
	rv := s.st.addReview(rp, n, s.botLogin(), state, body.Body)
	for _, c := range body.Comments {
		rc, err := s.st.addReviewComment(rp, n, ReviewCommentSpec{Login: rv.login, Body: c.Body, Path: c.Path, Line: c.Line, ReviewID: rv.id})
		if err != nil {
			WriteError(w, http.StatusUnprocessableEntity, "Validation Failed")
			return
		}
		rc.side = c.Side
	}
	WriteJSON(w, http.StatusOK, s.reviewJSON(rp, rv))
}

// hunkLine says why line on side cannot carry a comment in a file whose
// patch is patch ("" when it can): GitHub resolves a line only inside
// the file's hunks, on the side's own numbering.
func hunkLine(patch string, line int, side string) string {
	if patch == "" {
		return "Path could not be resolved"
	}
	for _, l := range strings.Split(patch, "\n") {
		var oldStart, oldLen, newStart, newLen int
		if !strings.HasPrefix(l, "@@ ") {
			continue
		}
		hdr := strings.SplitN(l, " ", 4)
		if len(hdr) < 3 {
			continue
		}
		oldStart, oldLen = hunkSpan(hdr[1])
		newStart, newLen = hunkSpan(hdr[2])
		start, n := newStart, newLen
		if side == "LEFT" {
			start, n = oldStart, oldLen
		}
		if line >= start && line < start+n {
			return ""
		}
	}
	return "Line could not be resolved"
}

// hunkSpan reads "-12,3" or "+7" of a hunk header.
func hunkSpan(s string) (start, n int) {
	a, b, found := strings.Cut(s[1:], ",")
	start, _ = strconv.Atoi(a)
	n = 1
	if found {
		n, _ = strconv.Atoi(b)
	}
	return start, n
}

// reviewJSON is a review, from the published example.
func (s *Server) reviewJSON(rp *repo, rv *review) map[string]any {
	id := strconv.FormatInt(rv.id, 10)
	html := "https://github.com/" + rp.fullName + "/pull/" + strconv.Itoa(rv.pr) + "#pullrequestreview-" + id
	api := s.URL + "/repos/" + rp.fullName + "/pulls/" + strconv.Itoa(rv.pr)
	m := overlay(s.canned("pull-request-review"), map[string]any{
		"id": rv.id, "node_id": "PRR_" + id, "user": s.userJSON(rv.login), "body": rv.body, "state": rv.state,
		"submitted_at":       rv.submitted.Format(time.RFC3339),
		"html_url":           html,
		"pull_request_url":   api,
		"author_association": "NONE",
		"_links":             map[string]any{"html": map[string]any{"href": html}, "pull_request": map[string]any{"href": api}},
		"commit_id":          nil,
	})
	if p := rp.pulls[rv.pr]; p != nil {
		m["commit_id"] = p.HeadSHA
	}
	return m
}

func (s *Server) listReviews(w http.ResponseWriter, r *http.Request) {
	rp, n, ok := s.prRoute(w, r)
	if !ok {
		return
	}
	defer s.st.mu.Unlock()
	out := []map[string]any{}
	for _, rv := range rp.reviews {
		if rv.pr == n {
			out = append(out, s.reviewJSON(rp, rv))
		}
	}
	WriteJSON(w, http.StatusOK, paginate(w, r, out))
}
