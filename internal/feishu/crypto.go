package feishu

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
)

// Decrypt opens the "encrypt" field of an event Feishu sent with an Encrypt
// Key: base64 of a 16-byte IV followed by AES-256-CBC ciphertext with PKCS#7
// padding, the AES key being SHA-256 of the Encrypt Key. It validates the
// padding (the SDK does not) and never panics on bad input.
func Decrypt(encrypted, encryptKey string) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(encrypted)
	if err != nil {
		return nil, fmt.Errorf("decoding base64: %w", err)
	}
	if len(raw) < 2*aes.BlockSize || len(raw)%aes.BlockSize != 0 {
		return nil, fmt.Errorf("ciphertext of %d bytes is not an IV plus whole blocks", len(raw))
	}
	key := sha256.Sum256([]byte(encryptKey))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, fmt.Errorf("creating cipher: %w", err)
	}
	iv, data := raw[:aes.BlockSize], raw[aes.BlockSize:]
	plain := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(plain, data)
	return unpad(plain)
}

// Encrypt is Decrypt's inverse, for sending an event as Feishu would
// (superagent deliver): a random IV, AES-256-CBC keyed by SHA-256 of the
// Encrypt Key, PKCS#7 padding, base64.
func Encrypt(plain []byte, encryptKey string) (string, error) {
	key := sha256.Sum256([]byte(encryptKey))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return "", fmt.Errorf("creating cipher: %w", err)
	}
	pad := aes.BlockSize - len(plain)%aes.BlockSize
	data := append(append([]byte(nil), plain...), bytes.Repeat([]byte{byte(pad)}, pad)...)
	out := make([]byte, aes.BlockSize+len(data))
	if _, err := rand.Read(out[:aes.BlockSize]); err != nil {
		return "", fmt.Errorf("choosing an IV: %w", err)
	}
	cipher.NewCBCEncrypter(block, out[:aes.BlockSize]).CryptBlocks(out[aes.BlockSize:], data)
	return base64.StdEncoding.EncodeToString(out), nil
}

var errBadPadding = errors.New("bad PKCS#7 padding")

func unpad(b []byte) ([]byte, error) {
	n := int(b[len(b)-1])
	if n == 0 || n > aes.BlockSize || n > len(b) {
		return nil, errBadPadding
	}
	for _, c := range b[len(b)-n:] {
		if int(c) != n {
			return nil, errBadPadding
		}
	}
	return b[:len(b)-n], nil
}

// Signature computes X-Lark-Signature: the hex SHA-256 of timestamp, nonce,
// Encrypt Key and the raw body, concatenated.
func Signature(timestamp, nonce, encryptKey string, body []byte) string {
	sum := signatureSum(timestamp, nonce, encryptKey, body)
	return hex.EncodeToString(sum[:])
}

func signatureSum(timestamp, nonce, encryptKey string, body []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(timestamp))
	h.Write([]byte(nonce))
	h.Write([]byte(encryptKey))
	h.Write(body)
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// validSignature compares the header with the expected signature in constant
// time (the SDK uses ==).
func validSignature(header, timestamp, nonce, encryptKey string, body []byte) bool {
	got, err := hex.DecodeString(header)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	want := signatureSum(timestamp, nonce, encryptKey, body)
	return subtle.ConstantTimeCompare(got, want[:]) == 1
}

// equalSecret compares two secrets in constant time; empty never matches.
func equalSecret(got, want string) bool {
	if got == "" || want == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
