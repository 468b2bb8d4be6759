// Package signinpage is what the fakes' authorization pages share (the
// fake GitHub's and the fake Feishu's): the redirect URL's check, the
// sign-in form a browser nobody is signed in to sees, and the redirect
// back with a code and the state.
package signinpage

import (
	"net/http"
	"net/url"
)

// RedirectURL parses the page's redirect_uri, which must be an absolute
// http(s) URL; ok is false when it is not.
func RedirectURL(raw string) (u *url.URL, ok bool) {
	u, err := url.Parse(raw)
	if raw == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, false
	}
	return u, true
}

// Answer answers the page: when signedIn, the browser goes back to
// redirect with code and the request's state; else it sees the platform's
// sign-in form (title names it) and stays.
func Answer(w http.ResponseWriter, r *http.Request, redirect *url.URL, signedIn bool, code, title string) {
	if !signedIn {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte("<!doctype html><title>Sign in to " + title + "</title><form>Sign in to " + title + " to continue</form>"))
		return
	}
	back := url.Values{"code": {code}}
	if st := r.URL.Query().Get("state"); st != "" {
		back.Set("state", st)
	}
	sep := "?"
	if redirect.RawQuery != "" {
		sep = "&"
	}
	http.Redirect(w, r, redirect.String()+sep+back.Encode(), http.StatusFound)
}
