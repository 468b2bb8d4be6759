// Package people is who is who: a person of the team with a display name
// and a role (admin or member), and the accounts they are known by on
// GitHub (logins) and Feishu (open_id, union_id). The host resolves every
// card's author, every panel sign-in and every gate decision through it;
// the model never writes it.
//
// People are filled in three ways: automatically where a platform says who
// someone is (a Feishu message's sender, with the name Feishu's contact
// API gives), by an admin (the panel, /api/people, `superagent people
// import`), and by a Feishu user proving their GitHub login through the
// GitHub App's user authorization (OAuth, see OAuth).
package people

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Roles.
const (
	// RoleAdmin may change prompts, policy and people in the panel.
	RoleAdmin = "admin"
	// RoleMember may see the panel and steer Tickets (pause, resume, stop).
	RoleMember = "member"
)

// Identity kinds.
const (
	KindGitHub        = "github"
	KindFeishuOpenID  = "feishu_open_id"
	KindFeishuUnionID = "feishu_union_id"
)

// Sources of an identity: who linked it.
const (
	SourceAdmin  = "admin"
	SourceOAuth  = "oauth"
	SourceFeishu = "feishu"
)

// Person is one person of the team, as /api/people and the people file
// show them.
type Person struct {
	ID   int64  `json:"id,omitempty"`
	Name string `json:"name"`
	Role string `json:"role"`
	// GitHub are the person's GitHub logins, lower-cased.
	GitHub []string `json:"github,omitempty"`
	// FeishuOpenIDs and FeishuUnionIDs are the person's Feishu ids (ou_…,
	// on_…).
	FeishuOpenIDs  []string  `json:"feishu_open_ids,omitempty"`
	FeishuUnionIDs []string  `json:"feishu_union_ids,omitempty"`
	CreatedAt      time.Time `json:"created_at,omitzero"`
	UpdatedAt      time.Time `json:"updated_at,omitzero"`
}

// MaxNameLength bounds a display name.
const MaxNameLength = 100

// GitHub's rule for a login: alphanumerics and single hyphens, not at the
// ends, at most 39 characters.
var loginSyntax = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9]|-[A-Za-z0-9]){0,38}$`)

var feishuIDSyntax = regexp.MustCompile(`^[A-Za-z0-9_-]{1,100}$`)

// ValidLogin reports whether login is a GitHub login.
func ValidLogin(login string) bool { return loginSyntax.MatchString(login) }

// Normalize trims the person's fields, lower-cases the GitHub logins and
// sorts and de-duplicates every list; a missing role is member.
func Normalize(p Person) Person {
	p.Name = strings.TrimSpace(p.Name)
	p.Role = strings.TrimSpace(p.Role)
	if p.Role == "" {
		p.Role = RoleMember
	}
	clean := func(in []string, lower bool) []string {
		out := make([]string, 0, len(in))
		for _, v := range in {
			v = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), "@"))
			if lower {
				v = strings.ToLower(v)
			}
			out = append(out, v)
		}
		slices.Sort(out)
		out = slices.Compact(out)
		if len(out) == 0 {
			return nil
		}
		return out
	}
	p.GitHub = clean(p.GitHub, true)
	p.FeishuOpenIDs = clean(p.FeishuOpenIDs, false)
	p.FeishuUnionIDs = clean(p.FeishuUnionIDs, false)
	return p
}

// Problems lists everything wrong with a normalized person, each problem
// naming the field; empty when the person is valid. label prefixes each
// problem ("person 3").
func Problems(label string, p Person) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, label+": "+fmt.Sprintf(format, args...)) }
	switch {
	case p.Name == "":
		add("name is required")
	case utf8.RuneCountInString(p.Name) > MaxNameLength || strings.ContainsAny(p.Name, "\r\n\t") || !utf8.ValidString(p.Name):
		add("name must be one line of at most %d characters", MaxNameLength)
	}
	if p.Role != RoleAdmin && p.Role != RoleMember {
		add("role must be admin or member, not %q", p.Role)
	}
	for _, l := range p.GitHub {
		if !ValidLogin(l) {
			add("github login %q is not a GitHub login", l)
		}
	}
	for _, id := range p.FeishuOpenIDs {
		if !strings.HasPrefix(id, "ou_") || !feishuIDSyntax.MatchString(id) {
			add("feishu open_id %q is not a Feishu open_id (ou_…)", id)
		}
	}
	for _, id := range p.FeishuUnionIDs {
		if !strings.HasPrefix(id, "on_") || !feishuIDSyntax.MatchString(id) {
			add("feishu union_id %q is not a Feishu union_id (on_…)", id)
		}
	}
	return out
}

// identities lists a normalized person's accounts as (kind, value) pairs.
func identities(p Person) [][2]string {
	var out [][2]string
	for _, v := range p.GitHub {
		out = append(out, [2]string{KindGitHub, v})
	}
	for _, v := range p.FeishuOpenIDs {
		out = append(out, [2]string{KindFeishuOpenID, v})
	}
	for _, v := range p.FeishuUnionIDs {
		out = append(out, [2]string{KindFeishuUnionID, v})
	}
	return out
}

// ListProblems checks a whole list of people: each person, and that no
// account belongs to two of them.
func ListProblems(list []Person) []string {
	var out []string
	owner := map[[2]string]int{}
	for i, p := range list {
		label := fmt.Sprintf("person %d", i+1)
		if p.Name != "" {
			label = fmt.Sprintf("person %d (%s)", i+1, p.Name)
		}
		out = append(out, Problems(label, p)...)
		for _, id := range identities(p) {
			if j, ok := owner[id]; ok {
				out = append(out, fmt.Sprintf("%s: %s %q is also given to person %d", label, kindText(id[0]), id[1], j+1))
				continue
			}
			owner[id] = i
		}
	}
	return out
}

func kindText(kind string) string {
	switch kind {
	case KindGitHub:
		return "github login"
	case KindFeishuOpenID:
		return "feishu open_id"
	}
	return "feishu union_id"
}
