package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the length of a Box key: AES-256.
const KeySize = 32

// Box seals values stored at rest (the repositories' secrets) with
// AES-256-GCM under one key the deployment holds outside the database.
type Box struct {
	aead cipher.AEAD
}

// ParseKey reads a key written as 64 hex digits or as base64 (standard or
// URL alphabet, padded or not) of 32 bytes.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil && len(b) == KeySize {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == KeySize {
			return b, nil
		}
	}
	return nil, fmt.Errorf("the key must be %d bytes, written as 64 hex digits or base64 (e.g. the output of `openssl rand -base64 32`)", KeySize)
}

// NewBox returns a Box over key, which must be KeySize bytes.
func NewBox(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("a box key must be %d bytes, not %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead}, nil
}

// Seal encrypts plain with a fresh random nonce; label (for example the
// repository and the secret's name) is authenticated with it, so a sealed
// value copied to another row does not open.
func (b *Box) Seal(plain, label string) string {
	nonce := make([]byte, b.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return base64.StdEncoding.EncodeToString(b.aead.Seal(nonce, nonce, []byte(plain), []byte(label)))
}

// ErrOpen is returned by Open for a value that does not open under the
// Box's key and label.
var ErrOpen = errors.New("sealed value does not open under this key")

// Open decrypts what Seal returned for the same label.
func (b *Box) Open(sealed, label string) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(sealed)
	if err != nil || len(raw) < b.aead.NonceSize() {
		return "", ErrOpen
	}
	n := b.aead.NonceSize()
	plain, err := b.aead.Open(nil, raw[:n], raw[n:], []byte(label))
	if err != nil {
		return "", ErrOpen
	}
	return string(plain), nil
}
