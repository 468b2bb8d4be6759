package github

import (
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// PullRequest is a snapshot of a pull request the fake holds.
type PullRequest struct {
	Number int
	Title  string
	Body   string
	// Head and Base are branch names.
	Head    string
	Base    string
	HeadSHA string
	Draft   bool
	// State is "open" or "closed".
	State  string
	Merged bool
	// MergeCommitSHA is the commit the merge made on Base.
	MergeCommitSHA string
	// User is the author's login: Slug+"[bot]" for pull requests opened
	// with an installation token.
	User string
}

// PullRequestSpec describes a pull request a person opens (AddPullRequest).
type PullRequestSpec struct {
	// Login is the author; required.
	Login string
	// Head is the branch to merge; it must exist (PushAs).
	Head string
	// Base defaults to the repository's default branch.
	Base  string
	Title string
	Body  string
	Draft bool
	// HeadRepo is the fork (owner/name, added with AddRepo) the head
	// branch belongs to; empty for a branch of the repository itself. The
	// fake reads the head's commits from Head in the base repository, as
	// GitHub keeps them there (refs/pull/N/head).
	HeadRepo string
	// MaintainerCanModify is the author's "allow edits by maintainers".
	MaintainerCanModify bool
}

type pull struct {
	PullRequest
	baseSHA                     string
	additions, deletions, files int
	commits                     int
	mergeable                   bool
	created, closed, mergedAt   time.Time
	headRepo                    string
	maintainerCanModify         bool
}

// AddPullRequest opens a pull request on fullName as spec.Login and returns
// its number.
func (s *Server) AddPullRequest(t testing.TB, fullName string, spec PullRequestSpec) int {
	t.Helper()
	if spec.Login == "" {
		t.Fatalf("fake GitHub: a pull request on %s needs a Login", fullName)
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	rp := s.st.repos[strings.ToLower(fullName)]
	if rp == nil || rp.dir == "" {
		t.Fatalf("fake GitHub: no repository %s (AddRepo)", fullName)
	}
	p, msg := s.openPull(rp, spec)
	if p == nil {
		t.Fatalf("fake GitHub: opening pull request on %s: %s", fullName, msg)
	}
	return p.Number
}

// PullRequests returns fullName's pull requests by number.
func (s *Server) PullRequests(fullName string) []PullRequest {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	rp := s.st.repos[strings.ToLower(fullName)]
	if rp == nil {
		return nil
	}
	var out []PullRequest
	for _, p := range rp.sortedPulls() {
		s.refresh(rp, p)
		out = append(out, p.PullRequest)
	}
	return out
}

func (r *repo) sortedPulls() []*pull {
	ps := make([]*pull, 0, len(r.pulls))
	for _, p := range r.pulls {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Number < ps[j].Number })
	return ps
}

// openPull validates and opens a pull request, returning nil and GitHub's
// error message if it cannot; st.mu must be held.
func (s *Server) openPull(rp *repo, spec PullRequestSpec) (*pull, string) {
	if spec.Base == "" {
		spec.Base = rp.defaultBranch
	}
	owner, _, _ := strings.Cut(rp.fullName, "/")
	if _, err := resolve(rp.dir, spec.Base); err != nil {
		return nil, "base: invalid"
	}
	if _, err := resolve(rp.dir, spec.Head); err != nil {
		return nil, "head: invalid"
	}
	for _, p := range rp.pulls {
		if p.State == "open" && p.Head == spec.Head && p.Base == spec.Base {
			return nil, "A pull request already exists for " + owner + ":" + spec.Head + "."
		}
	}
	p := &pull{PullRequest: PullRequest{
		Number: rp.nextNumber(), Title: spec.Title, Body: spec.Body, Head: spec.Head, Base: spec.Base,
		Draft: spec.Draft, State: "open", User: spec.Login,
	}, created: time.Now().UTC().Truncate(time.Second), headRepo: spec.HeadRepo, maintainerCanModify: spec.MaintainerCanModify}
	s.refresh(rp, p)
	if p.commits == 0 {
		return nil, "No commits between " + spec.Base + " and " + spec.Head
	}
	rp.pulls[p.Number] = p
	return p, ""
}

// refresh reads the branches of an unmerged pull request again, as GitHub
// does on every push; st.mu must be held.
func (s *Server) refresh(rp *repo, p *pull) {
	if p.Merged || rp.dir == "" {
		return
	}
	if sha, err := resolve(rp.dir, p.Head); err == nil {
		p.HeadSHA = sha
	}
	if sha, err := resolve(rp.dir, p.Base); err == nil {
		p.baseSHA = sha
	}
	files := diffFiles(rp.dir, p.baseSHA, p.HeadSHA)
	p.additions, p.deletions, p.files = 0, 0, len(files)
	for _, f := range files {
		p.additions += f.additions
		p.deletions += f.deletions
	}
	n, _ := runGit("", nil, "--git-dir", rp.dir, "rev-list", "--count", p.baseSHA+".."+p.HeadSHA)
	p.commits, _ = strconv.Atoi(n)
	_, err := mergeTree(rp.dir, p.baseSHA, p.HeadSHA)
	p.mergeable = err == nil
}

type fileStat struct {
	name                 string
	additions, deletions int
	status               string // added, removed, modified, renamed
}

// diffFiles is git diff --numstat base...head.
func diffFiles(dir, base, head string) []fileStat {
	out, err := runGit("", nil, "--git-dir", dir, "diff", "--numstat", base+"..."+head)
	if err != nil || out == "" {
		return nil
	}
	var fs []fileStat
	for _, line := range strings.Split(out, "\n") {
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 {
			continue
		}
		a, _ := strconv.Atoi(parts[0]) // "-" for binary files counts 0
		d, _ := strconv.Atoi(parts[1])
		fs = append(fs, fileStat{name: parts[2], additions: a, deletions: d, status: "modified"})
	}
	names, _ := runGit("", nil, "--git-dir", dir, "diff", "--name-status", "--no-renames", base+"..."+head)
	status := map[string]string{}
	for _, line := range strings.Split(names, "\n") {
		if code, name, ok := strings.Cut(line, "\t"); ok {
			status[name] = map[string]string{"A": "added", "D": "removed"}[code]
		}
	}
	for i := range fs {
		if st := status[fs[i].name]; st != "" {
			fs[i].status = st
		}
	}
	return fs
}

// mergeTree returns the tree merging head into base (git merge-tree
// --write-tree, git 2.38 or later), or an error on
// conflicts.
func mergeTree(dir, base, head string) (string, error) {
	out, err := runGit("", nil, "--git-dir", dir, "merge-tree", "--write-tree", "--no-messages", base, head)
	if err != nil {
		return "", err
	}
	tree, _, _ := strings.Cut(out, "\n")
	return tree, nil
}

// pullJSON is a pull request as GET .../pulls/{number} answers it, from
// the published example; st.mu must be held.
func (s *Server) pullJSON(rp *repo, p *pull) map[string]any {
	return s.pullFrom(s.canned("pull-request"), rp, p)
}

// pullSimpleJSON is a pull request as a list answers it
// (pull-request-simple): no mergeability, counts or merge state, which
// GitHub computes only for one pull request at a time.
func (s *Server) pullSimpleJSON(rp *repo, p *pull) map[string]any {
	base := s.canned("pull-request-simple-items", 0)
	keep := make(map[string]any, len(base))
	for k := range base {
		keep[k] = true
	}
	return only(s.pullFrom(base, rp, p), keep)
}

func (s *Server) pullFrom(m map[string]any, rp *repo, p *pull) map[string]any {
	owner, _, _ := strings.Cut(rp.fullName, "/")
	num := strconv.Itoa(p.Number)
	ts := func(t time.Time) any {
		if t.IsZero() {
			return nil
		}
		return t.Format(time.RFC3339)
	}
	state := "clean"
	if !p.mergeable {
		state = "dirty"
	}
	var mergeSHA any
	if p.MergeCommitSHA != "" {
		mergeSHA = p.MergeCommitSHA
	}
	var mergedBy any
	if p.Merged {
		mergedBy = s.userJSON(s.botLogin())
	}
	api := s.URL + "/repos/" + rp.fullName
	web := "https://github.com/" + rp.fullName
	rebase(m, s.repoReplacer(rp.fullName, "/pulls/1347", "/pulls/"+num, "/issues/1347", "/issues/"+num, "/pull/1347", "/pull/"+num))
	side := func(ref, sha string) map[string]any {
		return map[string]any{"ref": ref, "sha": sha, "label": owner + ":" + ref, "repo": s.repoJSON(rp), "user": s.orgJSON(owner, 1)}
	}
	// The example's nested objects are replaced whole, not merged.
	m["head"], m["base"] = s.headJSON(rp, p), side(p.Base, p.baseSHA)
	return overlay(m, map[string]any{
		"id": rp.id*100000 + int64(p.Number), "node_id": pullNodeID(rp, p.Number), "number": p.Number,
		"state": p.State, "title": p.Title, "body": p.Body, "draft": p.Draft, "locked": false, "active_lock_reason": nil,
		"merged": p.Merged, "mergeable": p.mergeable, "rebaseable": p.mergeable, "mergeable_state": state,
		"merge_commit_sha": mergeSHA, "merged_by": mergedBy, "auto_merge": nil,
		"created_at": ts(p.created), "updated_at": ts(p.created), "closed_at": ts(p.closed), "merged_at": ts(p.mergedAt),
		"html_url":     web + "/pull/" + num,
		"url":          api + "/pulls/" + num,
		"issue_url":    api + "/issues/" + num,
		"statuses_url": api + "/statuses/" + p.HeadSHA,
		"user":         s.userJSON(p.User),
		"labels":       []any{}, "assignee": nil, "assignees": []any{}, "milestone": nil,
		"requested_reviewers": []any{}, "requested_teams": []any{},
		"author_association":    "NONE",
		"maintainer_can_modify": p.maintainerCanModify,
		"comments":              len(s.commentsOn(rp.fullName, p.Number)),
		"review_comments":       rp.reviewCommentCount(p.Number),
		"_links": map[string]any{
			"statuses": map[string]any{"href": api + "/statuses/" + p.HeadSHA},
		},
		"additions": p.additions, "deletions": p.deletions, "changed_files": p.files, "commits": p.commits,
	})
}

func (r *repo) reviewCommentCount(pr int) int {
	n := 0
	for _, c := range r.comments {
		if c.pr == pr {
			n++
		}
	}
	return n
}

// pullNodeID is the GraphQL id of a pull request: PR_<repository id>_<number>.
func pullNodeID(rp *repo, number int) string {
	return "PR_" + strconv.FormatInt(rp.id, 10) + "_" + strconv.Itoa(number)
}

// validation answers 422 with GitHub's validation error shape.
func validation(w http.ResponseWriter, message string) {
	WriteJSON(w, http.StatusUnprocessableEntity, map[string]any{
		"message": "Validation Failed", "documentation_url": "https://docs.github.com/rest",
		"errors": []map[string]string{{"resource": "PullRequest", "code": "custom", "message": message}},
	})
}

// pullRoute authorizes r and finds the repository and the pull request
// {number}, locking st.mu, which the caller must unlock when ok.
func (s *Server) pullRoute(w http.ResponseWriter, r *http.Request) (*repo, *pull, bool) {
	if _, ok := s.Authorize(w, r); !ok {
		return nil, nil, false
	}
	s.st.mu.Lock()
	rp := s.st.lookup(r)
	n, _ := strconv.Atoi(r.PathValue("number"))
	if rp == nil || rp.pulls[n] == nil {
		s.st.mu.Unlock()
		WriteError(w, http.StatusNotFound, "Not Found")
		return nil, nil, false
	}
	p := rp.pulls[n]
	s.refresh(rp, p)
	return rp, p, true
}

func (s *Server) servePulls() {
	s.mux.HandleFunc("POST /repos/{owner}/{repo}/pulls", s.createPull)
	s.mux.HandleFunc("GET /repos/{owner}/{repo}/pulls", s.listPulls)
	s.mux.HandleFunc("GET /repos/{owner}/{repo}/pulls/{number}", func(w http.ResponseWriter, r *http.Request) {
		rp, p, ok := s.pullRoute(w, r)
		if !ok {
			return
		}
		defer s.st.mu.Unlock()
		WriteJSON(w, http.StatusOK, s.pullJSON(rp, p))
	})
	s.mux.HandleFunc("PATCH /repos/{owner}/{repo}/pulls/{number}", s.editPull)
	s.mux.HandleFunc("PUT /repos/{owner}/{repo}/pulls/{number}/merge", s.mergePull)
	s.mux.HandleFunc("GET /repos/{owner}/{repo}/pulls/{number}/files", func(w http.ResponseWriter, r *http.Request) {
		rp, p, ok := s.pullRoute(w, r)
		if !ok {
			return
		}
		defer s.st.mu.Unlock()
		out := []map[string]any{}
		for _, f := range diffFiles(rp.dir, p.baseSHA, p.HeadSHA) {
			out = append(out, s.fileJSON(rp, p, f))
		}
		WriteJSON(w, http.StatusOK, paginate(w, r, out))
	})
}

func (s *Server) createPull(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.Authorize(w, r); !ok {
		return
	}
	var body struct {
		Title string `json:"title"`
		Head  string `json:"head"`
		Base  string `json:"base"`
		Body  string `json:"body"`
		Draft bool   `json:"draft"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		WriteError(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	rp := s.st.lookup(r)
	if rp == nil || rp.dir == "" {
		WriteError(w, http.StatusNotFound, "Not Found")
		return
	}
	if body.Title == "" || body.Head == "" || body.Base == "" {
		validation(w, "title, head and base are required")
		return
	}
	owner, _, _ := strings.Cut(rp.fullName, "/")
	head := body.Head
	if o, b, ok := strings.Cut(head, ":"); ok {
		if !strings.EqualFold(o, owner) {
			validation(w, "head: forks are not supported by the fake")
			return
		}
		head = b
	}
	p, msg := s.openPull(rp, PullRequestSpec{Login: s.botLogin(), Head: head, Base: body.Base, Title: body.Title, Body: body.Body, Draft: body.Draft})
	if p == nil {
		validation(w, msg)
		return
	}
	WriteJSON(w, http.StatusCreated, s.pullJSON(rp, p))
}

func (s *Server) listPulls(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.Authorize(w, r); !ok {
		return
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	rp := s.st.lookup(r)
	if rp == nil {
		WriteError(w, http.StatusNotFound, "Not Found")
		return
	}
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	head := q.Get("head")
	if _, b, ok := strings.Cut(head, ":"); ok {
		head = b
	}
	out := []map[string]any{}
	ps := rp.sortedPulls()
	for i := len(ps) - 1; i >= 0; i-- { // newest first, as GitHub sorts by default
		p := ps[i]
		if (state != "all" && p.State != state) || (head != "" && p.Head != head) || (q.Get("base") != "" && p.Base != q.Get("base")) {
			continue
		}
		s.refresh(rp, p)
		out = append(out, s.pullSimpleJSON(rp, p))
	}
	WriteJSON(w, http.StatusOK, paginate(w, r, out))
}

func (s *Server) editPull(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Title *string `json:"title"`
		Body  *string `json:"body"`
		State *string `json:"state"`
		Base  *string `json:"base"`
	}
	rp, p, ok := s.pullRoute(w, r)
	if !ok {
		return
	}
	defer s.st.mu.Unlock()
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		WriteError(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	if body.Title != nil {
		p.Title = *body.Title
	}
	if body.Body != nil {
		p.Body = *body.Body
	}
	if body.Base != nil {
		p.Base = *body.Base
	}
	if body.State != nil && !p.Merged {
		switch *body.State {
		case "closed":
			p.State, p.closed = "closed", time.Now().UTC().Truncate(time.Second)
		case "open":
			p.State, p.closed = "open", time.Time{}
		default:
			validation(w, "state: must be open or closed")
			return
		}
	}
	s.refresh(rp, p)
	WriteJSON(w, http.StatusOK, s.pullJSON(rp, p))
}

// mergePull merges for real: merge_method "merge" (the default) makes a
// merge commit on base, "squash" and "rebase" one commit with the merged
// tree.
func (s *Server) mergePull(w http.ResponseWriter, r *http.Request) {
	var body struct {
		CommitTitle   string `json:"commit_title"`
		CommitMessage string `json:"commit_message"`
		SHA           string `json:"sha"`
		MergeMethod   string `json:"merge_method"`
	}
	rp, p, ok := s.pullRoute(w, r)
	if !ok {
		return
	}
	defer s.st.mu.Unlock()
	_ = json.NewDecoder(r.Body).Decode(&body)
	switch {
	case p.Merged || p.State != "open":
		WriteError(w, http.StatusMethodNotAllowed, "Pull Request is not mergeable")
		return
	case p.Draft:
		WriteError(w, http.StatusMethodNotAllowed, "Pull Request is still a draft")
		return
	case body.SHA != "" && body.SHA != p.HeadSHA:
		WriteError(w, http.StatusConflict, "Head branch was modified. Review and try the merge again.")
		return
	}
	sha, status, msg := s.merge(rp, p, body.MergeMethod, body.CommitTitle, body.CommitMessage)
	if status != http.StatusOK {
		WriteError(w, status, msg)
		return
	}
	WriteJSON(w, http.StatusOK, overlay(s.canned("pull-request-merge-result-response-if-merge-was-successful"),
		map[string]any{"sha": sha, "merged": true, "message": "Pull Request successfully merged"}))
}

// merge merges p into its base for real and answers the merge commit, or
// GitHub's status and message when it cannot; st.mu must be held.
func (s *Server) merge(rp *repo, p *pull, method, title, message string) (string, int, string) {
	tree, err := mergeTree(rp.dir, p.baseSHA, p.HeadSHA)
	if err != nil {
		return "", http.StatusMethodNotAllowed, "Pull Request is not mergeable"
	}
	if title == "" {
		owner, _, _ := strings.Cut(rp.fullName, "/")
		title = "Merge pull request #" + strconv.Itoa(p.Number) + " from " + owner + "/" + p.Head
		if method == "squash" || method == "rebase" {
			title = p.Title + " (#" + strconv.Itoa(p.Number) + ")"
		}
	}
	args := []string{"--git-dir", rp.dir, "commit-tree", tree, "-m", title, "-p", p.baseSHA}
	if message != "" {
		args = append(args, "-m", message)
	}
	if method == "" || method == "merge" {
		args = append(args, "-p", p.HeadSHA)
	}
	env := []string{"GIT_AUTHOR_NAME=GitHub", "GIT_AUTHOR_EMAIL=noreply@github.com", "GIT_COMMITTER_NAME=GitHub", "GIT_COMMITTER_EMAIL=noreply@github.com"}
	sha, err := runGit("", env, args...)
	if err == nil {
		_, err = runGit("", nil, "--git-dir", rp.dir, "update-ref", "refs/heads/"+p.Base, sha, p.baseSHA)
	}
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return "", http.StatusConflict, "Base branch was modified. Review and try the merge again."
		}
		return "", http.StatusInternalServerError, err.Error()
	}
	now := time.Now().UTC().Truncate(time.Second)
	p.Merged, p.State, p.MergeCommitSHA, p.mergedAt, p.closed = true, "closed", sha, now, now
	return sha, http.StatusOK, ""
}

// paginate answers page and per_page (default 30, as GitHub) and sets the
// Link header go-github reads NextPage from.
func paginate[T any](w http.ResponseWriter, r *http.Request, items []T) []T {
	q := r.URL.Query()
	per, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || per <= 0 {
		per = 30
	}
	per = min(per, 100)
	page, err := strconv.Atoi(q.Get("page"))
	if err != nil || page <= 0 {
		page = 1
	}
	start := min((page-1)*per, len(items))
	end := min(start+per, len(items))
	if end < len(items) {
		u := *r.URL
		q.Set("page", strconv.Itoa(page+1))
		q.Set("per_page", strconv.Itoa(per))
		u.RawQuery = q.Encode()
		w.Header().Set("Link", `<http://`+r.Host+u.String()+`>; rel="next"`)
	}
	return items[start:end]
}

// fileJSON is one changed file of a pull request (diff-entry), from the
// published example, with its patch as git computes it.
func (s *Server) fileJSON(rp *repo, p *pull, f fileStat) map[string]any {
	m := s.canned("diff-entry-items", 0)
	web := "https://github.com/" + rp.fullName
	blob, _ := runGit("", nil, "--git-dir", rp.dir, "rev-parse", "--verify", "--quiet", p.HeadSHA+":"+f.name)
	out := overlay(m, map[string]any{
		"sha": blob, "filename": f.name, "status": f.status,
		"additions": f.additions, "deletions": f.deletions, "changes": f.additions + f.deletions,
		"blob_url":     web + "/blob/" + p.HeadSHA + "/" + f.name,
		"raw_url":      web + "/raw/" + p.HeadSHA + "/" + f.name,
		"contents_url": s.URL + "/repos/" + rp.fullName + "/contents/" + f.name + "?ref=" + p.HeadSHA,
		"patch":        filePatch(rp.dir, p.baseSHA, p.HeadSHA, f.name),
	})
	if blob == "" {
		out["sha"] = strings.Repeat("0", 40) // a removed file
	}
	return out
}

// filePatch is GitHub's patch field: the file's unified diff, hunks only.
func filePatch(dir, base, head, name string) string {
	out, err := runGit("", nil, "--git-dir", dir, "diff", "--no-color", base+"..."+head, "--", name)
	if err != nil {
		return ""
	}
	if i := strings.Index(out, "\n@@"); i >= 0 {
		return out[i+1:]
	}
	return ""
}
