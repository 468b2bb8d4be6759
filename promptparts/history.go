package promptparts

import (
	"context"
	"slices"
)

// Content is one revision as the agents read it under that revision: every
// item's text, each built-in part with the text the revision was saved
// with, however many releases later.
type Content struct {
	VersionInfo
	// Builtins says how much is known of the built-in texts the revision
	// was saved with.
	Builtins BuiltinState `json:"builtins"`
	// Unrecorded lists the parts the revision did not override whose
	// built-in text is not known; their items show this release's text.
	Unrecorded []string      `json:"unrecorded"`
	Items      []ContentItem `json:"items"`
}

// ContentItem is one item of a revision's content.
type ContentItem struct {
	// Key is a part key, "sections/<name>", "skills/<name>" or "policy".
	Key  string `json:"key"`
	Text string `json:"text"`
	// Overridden says the team's text replaces the built-in one.
	Overridden bool `json:"overridden,omitempty"`
	// Unrecorded says the text is this release's, standing in for a
	// built-in text that was not recorded.
	Unrecorded bool `json:"unrecorded,omitempty"`
}

// Content returns revision rev's content, items sorted by key.
func (s *Service) Content(ctx context.Context, rev int64) (Content, error) {
	v, b, err := s.versionWithBuiltins(ctx, rev)
	if err != nil {
		return Content{}, err
	}
	c := Content{VersionInfo: v.VersionInfo, Builtins: b.state, Unrecorded: []string{}, Items: []ContentItem{}}
	items := s.items(v.Settings, b)
	keys := make([]string, 0, len(items))
	for k := range items {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		_, overridden := v.Settings.Overrides[k]
		it := items[k]
		c.Items = append(c.Items, ContentItem{Key: k, Text: it.text, Overridden: overridden, Unrecorded: it.unknown})
		if it.unknown {
			c.Unrecorded = append(c.Unrecorded, k)
		}
	}
	return c, nil
}
