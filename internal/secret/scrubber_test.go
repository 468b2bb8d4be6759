package secret

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

const token = "ghs_16C7e42F292c6912E7710c838347Ae178B4a"

func TestScrub(t *testing.T) {
	s := New(token, "short", "")
	require.Equal(t, 1, s.Len(), "empty and short values are not secrets")

	tests := []struct {
		name string
		in   string
	}{
		{"plain", "token is " + token + " ok"},
		{"url credentials", "fatal: https://x-access-token:" + token + "@github.com/acme/repo.git"},
		{"query escaped", "GET /?t=" + url.QueryEscape(token+"/=")},
		{"base64", "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))},
		{"base64 url alphabet", base64.URLEncoding.EncodeToString([]byte(token))},
		{"base64 inside larger blob, offset 1", base64.StdEncoding.EncodeToString([]byte("a" + token + "tail"))},
		{"base64 inside larger blob, offset 2", base64.StdEncoding.EncodeToString([]byte("ab" + token + "tail"))},
		{"base64 inside larger blob, offset 3", base64.StdEncoding.EncodeToString([]byte("abc" + token + "tail"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := s.Scrub(tt.in)
			require.Contains(t, out, Redacted)
			require.NotContains(t, out, token)
			require.NotContains(t, out, base64.StdEncoding.EncodeToString([]byte(token))[:20])
		})
	}
	require.Equal(t, "nothing secret here", s.Scrub("nothing secret here"))
}

func TestScrubQueryEscapedSecret(t *testing.T) {
	key := "sk-abc/def+ghi=jkl"
	s := New(key)
	require.Equal(t, "key="+Redacted, s.Scrub("key="+url.QueryEscape(key)))
	require.Equal(t, "key="+Redacted, s.Scrub("key="+key))
}

func TestAddConcurrently(t *testing.T) {
	s := New()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := fmt.Sprintf("secret-value-%02d", i)
			s.Add(v)
			require.Equal(t, "x "+Redacted, s.Scrub("x "+v))
		}()
	}
	wg.Wait()
	require.Equal(t, 8, s.Len())
}

func TestHandler(t *testing.T) {
	s := New(token)
	var buf bytes.Buffer
	log := slog.New(NewHandler(slog.NewTextHandler(&buf, nil), s))
	log = log.With("header", "Bearer "+token)
	log.Info("cloning with "+token,
		"url", "https://x-access-token:"+token+"@github.com/a/b",
		"err", errors.New("push failed: "+token),
		slog.Group("req", "auth", token, "n", 3))
	out := buf.String()
	require.NotContains(t, out, token)
	require.Equal(t, 5, strings.Count(out, Redacted), out)
	require.Contains(t, out, "req.n=3")
}

func BenchmarkScrub(b *testing.B) {
	secrets := make([]string, 20)
	for i := range secrets {
		secrets[i] = fmt.Sprintf("ghs_%036d", i)
	}
	s := New(secrets...)
	text := strings.Repeat("some ordinary command output without anything secret in it\n", 200)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		_ = s.Scrub(text)
	}
}
