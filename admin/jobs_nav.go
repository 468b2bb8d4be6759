package admin

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
)

// jobsNav is the way back to the panel put on River's job UI, which is an
// application of its own with no place for the panel's navigation. The
// job UI's policy allows style elements, not style attributes.
const jobsNav = `<style>#superagent-nav{position:fixed;right:0.75rem;bottom:0.75rem;z-index:1000;font:13px system-ui,sans-serif;` +
	`background:#fff;color:#222;border:1px solid #ccc;border-radius:6px;padding:0.35rem 0.6rem;box-shadow:0 1px 4px rgba(0,0,0,.15)}` +
	`#superagent-nav a{color:#0b5cad;text-decoration:none;margin:0 0.25rem}#superagent-nav a:hover{text-decoration:underline}</style>` +
	`<nav id="superagent-nav" aria-label="superagent"><a href="/admin/">← superagent panel</a>·<a href="/admin/tickets">Tickets</a>·<a href="/admin/prompts">Prompts</a></nav>`

var bodyTag = regexp.MustCompile(`(?i)<body[^>]*>`)

// maxJobsPage bounds the job UI page that is buffered to add the way back.
const maxJobsPage = 1 << 20

// withPanelNav puts jobsNav at the start of the body of the job UI's HTML
// pages; everything else (its scripts, styles and API) passes untouched.
func withPanelNav(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		res := rec.Result()
		body := rec.Body.Bytes()
		html := bytes.HasPrefix([]byte(res.Header.Get("Content-Type")), []byte("text/html"))
		if html && res.Header.Get("Content-Encoding") == "" && len(body) <= maxJobsPage {
			if loc := bodyTag.FindIndex(body); loc != nil {
				body = append(body[:loc[1]:loc[1]], append([]byte(jobsNav), body[loc[1]:]...)...)
				res.Header.Set("Content-Length", strconv.Itoa(len(body)))
			}
		}
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		_, _ = w.Write(body)
	})
}
