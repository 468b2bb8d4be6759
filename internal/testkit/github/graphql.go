package github

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// graphql answers the few GraphQL operations the Executor sends, at
// POST /graphql (GitHub's https://api.github.com/graphql). There is no
// parser: the operation is recognized by its field name and each argument
// is read where the query names it, either inline (threadId: "PRRT_1") or
// through any variable (threadId: $id with {"id": "PRRT_1"}), so variable
// names are free. Supported:
//
//	mutation { resolveReviewThread(input: {threadId}) { thread { id isResolved } } }
//	mutation { unresolveReviewThread(input: {threadId}) { thread { id isResolved } } }
//	mutation { markPullRequestReadyForReview(input: {pullRequestId}) { pullRequest { id isDraft } } }
//	mutation { convertPullRequestToDraft(input: {pullRequestId}) { pullRequest { id isDraft } } }
//	query { repository(owner, name) { pullRequest(number) { id number isDraft state
//	    reviewThreads(first: 100) { totalCount pageInfo { hasNextPage endCursor }
//	      nodes { id isResolved isOutdated path line
//	        comments(first: 50) { nodes { id databaseId author { login } body url createdAt } } } } } } }
//
// Answers carry every field listed whatever the query selects. As on
// GitHub, a bot author's GraphQL login lacks REST's "[bot]" suffix
// (author { login __typename } is "superagent", "Bot"). Thread ids
// are PRRT_<n> (AddReviewComment); pull request ids are
// PR_<repository id>_<number>, as in REST node_id.
func (s *Server) graphql(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.Authorize(w, r); !ok {
		return
	}
	var body struct {
		Query     string         `json:"query"`
		Variables map[string]any `json:"variables"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		WriteError(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	arg := func(name string) string { return gqlArg(body.Query, body.Variables, name) }
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	q := body.Query
	var data map[string]any
	var err error
	switch {
	case strings.Contains(q, "unresolveReviewThread"):
		data, err = s.setResolved("unresolveReviewThread", arg("threadId"), false)
	case strings.Contains(q, "resolveReviewThread"):
		data, err = s.setResolved("resolveReviewThread", arg("threadId"), true)
	case strings.Contains(q, "markPullRequestReadyForReview"):
		data, err = s.setDraft("markPullRequestReadyForReview", arg("pullRequestId"), false)
	case strings.Contains(q, "convertPullRequestToDraft"):
		data, err = s.setDraft("convertPullRequestToDraft", arg("pullRequestId"), true)
	case strings.Contains(q, "repository") && strings.Contains(q, "pullRequest"):
		data, err = s.queryPull(arg("owner"), arg("name"), arg("number"))
	default:
		err = fmt.Errorf("fake GitHub: unsupported GraphQL operation")
	}
	if err != nil {
		WriteJSON(w, http.StatusOK, map[string]any{"data": nil, "errors": []map[string]any{{"message": err.Error()}}})
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"data": data})
}

// gqlArg reads argument name of query: an inline string or number, or a
// variable.
func gqlArg(query string, vars map[string]any, name string) string {
	re := regexp.MustCompile(`(?:^|[^$\w])` + name + `\s*:\s*(\$\w+|"(?:[^"\\]|\\.)*"|-?\d+)`)
	m := re.FindStringSubmatch(query)
	if m == nil {
		if v, ok := vars[name]; ok { // a variable used in an unrecognized way
			return fmt.Sprint(v)
		}
		return ""
	}
	v := m[1]
	switch {
	case strings.HasPrefix(v, "$"):
		x, ok := vars[v[1:]]
		if !ok {
			return ""
		}
		if f, ok := x.(float64); ok {
			return strconv.FormatFloat(f, 'f', -1, 64)
		}
		return fmt.Sprint(x)
	case strings.HasPrefix(v, `"`):
		u, _ := strconv.Unquote(v)
		return u
	}
	return v
}

func (s *Server) findThread(id string) *thread {
	for _, rp := range s.st.repos {
		for _, th := range rp.threads {
			if th.id == id {
				return th
			}
		}
	}
	return nil
}

func notFound(id string) error {
	return fmt.Errorf("Could not resolve to a node with the global id of '%s'", id) //nolint:revive,staticcheck // GitHub's message
}

func (s *Server) setResolved(op, id string, resolved bool) (map[string]any, error) {
	th := s.findThread(id)
	if th == nil {
		return nil, notFound(id)
	}
	th.resolved = resolved
	return map[string]any{op: map[string]any{"clientMutationId": nil, "thread": map[string]any{"id": th.id, "isResolved": th.resolved}}}, nil
}

func (s *Server) findPull(id string) (*repo, *pull) {
	for _, rp := range s.st.repos {
		for _, p := range rp.pulls {
			if pullNodeID(rp, p.Number) == id {
				return rp, p
			}
		}
	}
	return nil, nil
}

func (s *Server) setDraft(op, id string, draft bool) (map[string]any, error) {
	rp, p := s.findPull(id)
	if p == nil {
		return nil, notFound(id)
	}
	p.Draft = draft
	return map[string]any{op: map[string]any{"clientMutationId": nil, "pullRequest": s.pullNode(rp, p)}}, nil
}

func (s *Server) pullNode(rp *repo, p *pull) map[string]any {
	return map[string]any{
		"id": pullNodeID(rp, p.Number), "number": p.Number, "isDraft": p.Draft, "title": p.Title,
		"state": strings.ToUpper(map[bool]string{true: "merged", false: p.State}[p.Merged]),
		"url":   "https://github.com/" + rp.fullName + "/pull/" + strconv.Itoa(p.Number),
	}
}

func (s *Server) queryPull(owner, name, number string) (map[string]any, error) {
	rp := s.st.repos[strings.ToLower(owner+"/"+name)]
	if rp == nil {
		return nil, fmt.Errorf("Could not resolve to a Repository with the name '%s/%s'.", owner, name) //nolint:revive,staticcheck // GitHub's message
	}
	n, _ := strconv.Atoi(number)
	var pr map[string]any
	if p := rp.pulls[n]; p != nil {
		pr = s.pullNode(rp, p)
	} else {
		// A pull request only known through AddReviewComment.
		pr = map[string]any{"id": pullNodeID(rp, n), "number": n, "isDraft": false, "state": "OPEN"}
	}
	nodes := []map[string]any{}
	for _, th := range rp.threads {
		if th.pr != n {
			continue
		}
		comments := []map[string]any{}
		for _, c := range th.comments {
			comments = append(comments, map[string]any{
				"id": "PRRC_" + strconv.FormatInt(c.id, 10), "databaseId": c.id, "author": gqlActor(c.login), "body": c.body,
				"url":       "https://github.com/" + rp.fullName + "/pull/" + strconv.Itoa(n) + "#discussion_r" + strconv.FormatInt(c.id, 10),
				"createdAt": c.created.Format(time.RFC3339),
			})
		}
		nodes = append(nodes, map[string]any{
			"id": th.id, "isResolved": th.resolved, "isOutdated": false, "path": th.comments[0].path, "line": th.comments[0].line,
			"comments": map[string]any{"totalCount": len(comments), "nodes": comments},
		})
	}
	pr["reviewThreads"] = map[string]any{"totalCount": len(nodes), "nodes": nodes, "pageInfo": map[string]any{"hasNextPage": false, "endCursor": nil}}
	return map[string]any{"repository": map[string]any{"pullRequest": pr}}, nil
}

func gqlActor(login string) map[string]any {
	if l, ok := strings.CutSuffix(login, "[bot]"); ok {
		return map[string]any{"login": l, "__typename": "Bot"}
	}
	return map[string]any{"login": login, "__typename": "User"}
}
