package githubapp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// GraphQLURL is GitHub's GraphQL endpoint for the client's REST root:
// …/graphql on github.com, …/api/graphql on GitHub Enterprise Server.
func (c *Client) GraphQLURL() string {
	rest := strings.TrimRight(c.base.String(), "/")
	if base, ok := strings.CutSuffix(rest, "/api/v3"); ok {
		return base + "/api/graphql"
	}
	return rest + "/graphql"
}

// ReviewThread is a review thread as GraphQL gives it.
type ReviewThread struct {
	ID         string `json:"id"`
	IsResolved bool   `json:"isResolved"`
	Path       string `json:"path"`
	Line       int    `json:"line"`
	Comments   struct {
		Nodes []struct {
			DatabaseID int64 `json:"databaseId"`
			Author     struct {
				Login string `json:"login"`
			} `json:"author"`
			Body string `json:"body"`
		} `json:"nodes"`
	} `json:"comments"`
}

const reviewThreadsQuery = `query($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) { pullRequest(number: $number) {
    reviewThreads(first: 100) { nodes { id isResolved path line
      comments(first: 50) { nodes { databaseId author { login } body } } } } } } }`

// ReviewThreads lists the first hundred review threads of pull request
// number, each with its first fifty comments.
func (r *Repo) ReviewThreads(ctx context.Context, number int) ([]ReviewThread, error) {
	var data struct {
		Repository struct {
			PullRequest struct {
				ReviewThreads struct {
					Nodes []ReviewThread `json:"nodes"`
				} `json:"reviewThreads"`
			} `json:"pullRequest"`
		} `json:"repository"`
	}
	err := r.graphQLDo(ctx, reviewThreadsQuery, map[string]any{"owner": r.owner, "name": r.name, "number": number}, &data)
	if err != nil {
		return nil, fmt.Errorf("reading the review threads of %s#%d: %w", r.FullName(), number, err)
	}
	return data.Repository.PullRequest.ReviewThreads.Nodes, nil
}

// ResolveReviewThread marks the review thread id (its GraphQL node id)
// resolved.
func (r *Repo) ResolveReviewThread(ctx context.Context, id string) error {
	return r.graphQLDo(ctx, `mutation($id: ID!) { resolveReviewThread(input: {threadId: $id}) { thread { id isResolved } } }`,
		map[string]any{"id": id}, nil)
}

// MarkPullReady marks the draft pull request whose GraphQL node id is
// nodeID ready for review (REST has no way to).
func (r *Repo) MarkPullReady(ctx context.Context, nodeID string) error {
	return r.graphQLDo(ctx, `mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { id isDraft } } }`,
		map[string]any{"id": nodeID}, nil)
}

// graphQLDo runs one GraphQL request as the installation and decodes its
// data into out.
func (r *Repo) graphQLDo(ctx context.Context, query string, vars map[string]any, out any) error {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return fmt.Errorf("encoding a GraphQL request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.graphQL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("building a GraphQL request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	// The installation client's transport adds the token, paces writes and
	// retries rate limits.
	resp, err := r.gh.Client().Do(req)
	if err != nil {
		return fmt.Errorf("GraphQL request: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("reading a GraphQL answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GraphQL request: %s: %s", resp.Status, strings.TrimSpace(string(raw)))
	}
	var envelope struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(raw, &envelope); err != nil {
		return fmt.Errorf("decoding a GraphQL answer: %w", err)
	}
	if len(envelope.Errors) > 0 {
		msgs := make([]string, len(envelope.Errors))
		for i, m := range envelope.Errors {
			msgs[i] = m.Message
		}
		return fmt.Errorf("GraphQL: %s", strings.Join(msgs, "; "))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(envelope.Data, out); err != nil {
		return fmt.Errorf("decoding GraphQL data: %w", err)
	}
	return nil
}
