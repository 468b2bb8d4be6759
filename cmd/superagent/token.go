package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

const adminTokenFile = "admin-token"

// ensureAdminToken returns the configured admin token, or the one kept in the
// data directory, generating and storing it (mode 0600) on first start. A
// generated token is printed to out exactly once.
func ensureAdminToken(configured, dataDir string, out io.Writer) (string, error) {
	if configured != "" {
		return configured, nil
	}
	path := filepath.Join(dataDir, adminTokenFile)
	data, err := os.ReadFile(path)
	if err == nil {
		if tok := strings.TrimSpace(string(data)); tok != "" {
			return tok, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("reading admin token %s: %w", path, err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", fmt.Errorf("creating data directory %s: %w", dataDir, err)
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("generating admin token: %w", err)
	}
	tok := hex.EncodeToString(buf)
	// Write a private temporary file, then link it into place: the link fails
	// if another process got there first, and nobody ever reads a half-written
	// token.
	tmp, err := os.CreateTemp(dataDir, ".admin-token-*")
	if err != nil {
		return "", fmt.Errorf("storing admin token: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(tok + "\n"); err != nil {
		_ = tmp.Close()
		return "", fmt.Errorf("storing admin token: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("storing admin token: %w", err)
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		return ensureAdminToken("", dataDir, out)
	} else if err != nil {
		return "", fmt.Errorf("storing admin token %s: %w", path, err)
	}
	fmt.Fprintf(out, "superagent: generated an admin token (kept in %s; shown only this once):\n%s\n", path, tok)
	return tok, nil
}
