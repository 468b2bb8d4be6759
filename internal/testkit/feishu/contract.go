package feishu

import (
	"bytes"
	_ "embed" // the request schemas
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	larkauthen "github.com/larksuite/oapi-sdk-go/v3/service/authen/v1"
	larkcontact "github.com/larksuite/oapi-sdk-go/v3/service/contact/v3"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"

	"github.com/superagent-dev/superagent/internal/testkit/contract"
)

// larkOpenAPI holds the request schemas of the Open API calls superagent
// makes, extracted from @larksuiteoapi/lark-mcp's zod schemas
// (testdata/extract-lark-schemas.js; MIT, testdata/LICENSE-lark-mcp).
//
//go:embed testdata/lark-openapi.json
var larkOpenAPI []byte

// call is one documented Open API call.
type call struct {
	Name       string   `json:"name"`
	Method     string   `json:"method"`
	Path       string   `json:"path"` // with :parameters
	Body       any      `json:"body"`
	Query      any      `json:"query"`
	PathParams any      `json:"path_params"`
	Tokens     []string `json:"tokens"`

	schemas map[string]*contract.Schema // body, query, path_params
	answer  func() any                  // the SDK's response type, decoded strictly
}

// handDocumented are calls the product makes that lark-mcp does not
// describe, from Feishu's own documentation.
var handDocumented = []call{
	// https://open.feishu.cn/document/server-docs/im-v1/image/create (not
	// in lark-mcp, which carries no uploads): a multipart form with
	// image_type and the image file; the answer's data holds image_key.
	{Name: "im.v1.image.create", Method: http.MethodPost, Path: "/open-apis/im/v1/images", Tokens: []string{"tenant"},
		Body: map[string]any{"type": "object", "additionalProperties": false, "required": []any{"image_type", "image"},
			"properties": map[string]any{"image_type": map[string]any{"type": "string", "enum": []any{"message", "avatar"}},
				"image": map[string]any{"type": "string"}}}},
	// https://open.feishu.cn/document/client-docs/bot-v3/obtain-bot-info
	{Name: "bot.v3.info", Method: http.MethodGet, Path: "/open-apis/bot/v3/info", Tokens: []string{"tenant"}},
	// https://open.feishu.cn/document/server-docs/contact-v3/user/get
	// (lark-mcp 0.5.1 carries no contact calls): a user by id, the id's
	// kind and the department id's kind in the query.
	{Name: "contact.v3.user.get", Method: http.MethodGet, Path: "/open-apis/contact/v3/users/:user_id", Tokens: []string{"tenant"},
		Query: map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{
			"user_id_type":       map[string]any{"type": "string", "enum": []any{"open_id", "union_id", "user_id"}},
			"department_id_type": map[string]any{"type": "string", "enum": []any{"department_id", "open_department_id"}},
		}},
		PathParams: map[string]any{"type": "object", "additionalProperties": false, "required": []any{"user_id"},
			"properties": map[string]any{"user_id": map[string]any{"type": "string"}}}},
	// https://open.feishu.cn/document/server-docs/authentication-management/access-token/app_access_token_internal
	{Name: "auth.v3.auth.appAccessTokenInternal", Method: http.MethodPost, Path: "/open-apis/auth/v3/app_access_token/internal",
		Body: map[string]any{"type": "object", "additionalProperties": false, "required": []any{"app_id", "app_secret"},
			"properties": map[string]any{"app_id": map[string]any{"type": "string"}, "app_secret": map[string]any{"type": "string"}}}},
	// https://open.feishu.cn/document/uAjLw4CM/ukTMukTMukTM/reference/authen-v1/oidc-access_token/create
	// (lark-mcp 0.5.1 carries no authen calls): the sign-in's code for a
	// user_access_token, with the app_access_token.
	{Name: "authen.v1.oidcAccessToken.create", Method: http.MethodPost, Path: "/open-apis/authen/v1/oidc/access_token", Tokens: []string{"app"},
		Body: map[string]any{"type": "object", "additionalProperties": false, "required": []any{"grant_type", "code"},
			"properties": map[string]any{"grant_type": map[string]any{"type": "string", "enum": []any{"authorization_code"}},
				"code": map[string]any{"type": "string"}}}},
	// https://open.feishu.cn/document/uAjLw4CM/ukTMukTMukTM/reference/authen-v1/user_info/get
	{Name: "authen.v1.userInfo.get", Method: http.MethodGet, Path: "/open-apis/authen/v1/user_info", Tokens: []string{"user"}},
}

// answers are the SDK's response types, by call: the fake's answers must
// decode into them with no field left over.
var answers = map[string]func() any{
	"auth.v3.auth.tenantAccessTokenInternal": func() any { return &larkcore.TenantAccessTokenResp{} },
	"im.v1.message.create":                   func() any { return &larkim.CreateMessageResp{} },
	"im.v1.message.reply":                    func() any { return &larkim.ReplyMessageResp{} },
	"im.v1.message.get":                      func() any { return &larkim.GetMessageResp{} },
	"im.v1.message.patch":                    func() any { return &larkim.PatchMessageResp{} },
	"im.v1.messageReaction.create":           func() any { return &larkim.CreateMessageReactionResp{} },
	"im.v1.image.create":                     func() any { return &larkim.CreateImageResp{} },
	"contact.v3.user.get":                    func() any { return &larkcontact.GetUserResp{} },
	"auth.v3.auth.appAccessTokenInternal":    func() any { return &larkcore.AppAccessTokenResp{} },
	"authen.v1.oidcAccessToken.create":       func() any { return &larkauthen.CreateOidcAccessTokenResp{} },
	"authen.v1.userInfo.get":                 func() any { return &larkauthen.GetUserInfoResp{} },
}

var calls = sync.OnceValues(func() ([]*call, error) {
	var doc struct {
		Operations []*call `json:"operations"`
	}
	if err := json.Unmarshal(larkOpenAPI, &doc); err != nil {
		return nil, fmt.Errorf("decoding lark-openapi.json: %w", err)
	}
	for i := range handDocumented {
		c := handDocumented[i]
		doc.Operations = append(doc.Operations, &c)
	}
	comp := contract.NewCompiler(true)
	for i, c := range doc.Operations {
		c.schemas = map[string]*contract.Schema{}
		c.answer = answers[c.Name]
		for part, raw := range map[string]any{"body": c.Body, "query": c.Query, "path_params": c.PathParams} {
			if raw == nil {
				continue
			}
			// Through JSON again, for the validator's number type.
			b, _ := json.Marshal(raw)
			v, err := contract.DecodeJSON(b)
			if err != nil {
				return nil, err
			}
			loc := fmt.Sprintf("mem://contract/feishu/%d/%s.json", i, part)
			if err := comp.Add(loc, v); err != nil {
				return nil, err
			}
			s, err := comp.Compile(loc)
			if err != nil {
				return nil, err
			}
			c.schemas[part] = s
		}
	}
	return doc.Operations, nil
})

// match finds the call for method and path, with its path parameters.
func match(cs []*call, method, path string) (*call, map[string]string) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for _, c := range cs {
		if c.Method != method {
			continue
		}
		tpl := strings.Split(strings.Trim(c.Path, "/"), "/")
		if len(tpl) != len(segs) {
			continue
		}
		vals := map[string]string{}
		ok := true
		for i, t := range tpl {
			if name, isParam := strings.CutPrefix(t, ":"); isParam && segs[i] != "" {
				vals[name] = segs[i]
			} else if t != segs[i] {
				ok = false
				break
			}
		}
		if ok {
			return c, vals
		}
	}
	return nil, nil
}

// Violation is one way a request to the fake, or its answer, breaks
// Feishu's published description.
type Violation = contract.Violation

// checkRequest holds r to its call's schemas and returns the call, or nil
// when there is none (reported) or r is out of the contract.
func (s *Server) checkRequest(r *http.Request, raw []byte) *call {
	if r.URL.Path == wsPath || r.URL.Path == wsEndpointPath {
		return nil // the long connection's own protocol, not the Open API
	}
	if r.URL.Path == AuthorizePath {
		return nil // a page in the browser, not the Open API
	}
	cs, err := calls()
	if err != nil {
		s.t.Errorf("fake Feishu: loading the published schemas: %v", err)
		return nil
	}
	c, vals := match(cs, r.Method, r.URL.Path)
	if c == nil {
		s.report(Violation{Method: r.Method, Path: r.URL.Path, Problem: contract.Problem{Where: "route",
			Reason: "no call in testdata/lark-openapi.json (extracted from @larksuiteoapi/lark-mcp) or handDocumented"}})
		return nil
	}
	contract.Cover("feishu-call", c.Name)
	report := func(p contract.Problem) {
		s.report(Violation{Method: r.Method, Path: r.URL.Path, Operation: c.Name, Problem: p})
	}
	if sch := c.schemas["path_params"]; sch != nil {
		for _, p := range contract.Validate(sch, "path", stringsObject(vals)) {
			report(p)
		}
	}
	query := map[string]string{}
	for k, v := range r.URL.Query() {
		query[k] = v[0]
	}
	if sch := c.schemas["query"]; sch != nil {
		for _, p := range contract.Validate(sch, "query", stringsObject(query)) {
			report(p)
		}
	} else if len(query) > 0 {
		report(contract.Problem{Where: "query", Reason: "this call takes no query parameters"})
	}
	empty := len(bytes.TrimSpace(raw)) == 0
	switch sch := c.schemas["body"]; {
	case sch == nil && !empty:
		report(contract.Problem{Where: "request body", Reason: "this call takes no body"})
	case sch != nil && empty:
		report(contract.Problem{Where: "request body", Reason: "required, missing"})
	case sch != nil && strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data"):
		form, err := formObject(r.Header, raw)
		if err != nil {
			report(contract.Problem{Where: "request body", Reason: "not a multipart form: " + err.Error()})
			break
		}
		for _, p := range contract.Validate(sch, "request body", form) {
			report(p)
		}
	case sch != nil:
		v, err := contract.DecodeJSON(raw)
		if err != nil {
			report(contract.Problem{Where: "request body", Reason: "not JSON: " + err.Error()})
			break
		}
		for _, p := range contract.Validate(sch, "request body", v) {
			report(p)
		}
	}
	return c
}

func stringsObject(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// checkAnswer decodes the fake's answer into the SDK's response type,
// refusing fields the SDK does not know.
func (s *Server) checkAnswer(r *http.Request, c *call, body []byte) {
	if c == nil || c.answer == nil {
		return
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(c.answer()); err != nil {
		s.report(Violation{Method: r.Method, Path: r.URL.Path, Operation: c.Name,
			Problem: contract.Problem{Where: "response body", Reason: "does not decode strictly into the SDK's response type: " + err.Error()}})
	}
}

func (s *Server) report(v Violation) { s.Report(v) }

// Calls lists the documented calls the fake checks requests against.
func Calls() ([]string, error) {
	cs, err := calls()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range cs {
		out = append(out, c.Name+" "+c.Method+" "+c.Path)
	}
	sort.Strings(out)
	return out, nil
}
