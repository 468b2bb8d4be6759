// Package bodycodec keeps stored request bodies small. A webhook payload
// is JSON, written once and read at most a few times, and on SQLite every
// page of it is written twice (to the WAL and, at a checkpoint, to the
// database) by the one connection every writer shares: a 15 KB issue
// comment costs four overflow pages, compressed one.
//
// Pack is meant to run where the request is handled, outside the
// transaction that stores the body, so the shared writer only copies
// fewer bytes.
package bodycodec

import (
	"errors"
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// The encodings a stored body can be in; the column's CHECK names the same.
const (
	// Identity is the body as received.
	Identity = "identity"
	// Zstd is a Zstandard frame of the body.
	Zstd = "zstd"
)

// MaxSize bounds what Unpack returns: above GitHub's 25 MB cap on a
// payload, so a body that was stored always comes back, and a frame that
// claims or grows to more is refused instead of filling memory.
const MaxSize = 64 << 20

// minSize is the smallest body worth compressing: below a page, a
// compressed body saves no page and costs a frame header.
const minSize = 1024

var (
	encoder = mustEncoder()
	decoder = mustDecoder(MaxSize)
)

func mustEncoder() *zstd.Encoder {
	// The fastest level already shrinks JSON four- to sixfold; the
	// checksum lets Unpack tell a damaged row from a body.
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(true), zstd.WithLowerEncoderMem(true))
	if err != nil {
		panic(err)
	}
	return e
}

func mustDecoder(limit uint64) *zstd.Decoder {
	d, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(limit), zstd.WithDecoderConcurrency(0))
	if err != nil {
		panic(err)
	}
	return d
}

// Pack returns what to store for body and its encoding: compressed when
// that saves at least an eighth, as received otherwise. It is safe for
// concurrent use.
func Pack(body []byte) (data []byte, encoding string) {
	if len(body) < minSize {
		return body, Identity
	}
	packed := encoder.EncodeAll(body, make([]byte, 0, len(body)/4))
	if len(packed) > len(body)-len(body)/8 {
		return body, Identity
	}
	return packed, Zstd
}

// ErrUnknownEncoding is returned for a body stored in an encoding this
// release does not read.
var ErrUnknownEncoding = errors.New("unknown body encoding")

// Unpack returns the body stored as data in encoding.
func Unpack(data []byte, encoding string) ([]byte, error) {
	return unpack(decoder, data, encoding)
}

func unpack(d *zstd.Decoder, data []byte, encoding string) ([]byte, error) {
	switch encoding {
	case Identity:
		return data, nil
	case Zstd:
		body, err := d.DecodeAll(data, nil)
		if err != nil {
			return nil, fmt.Errorf("decompressing stored body: %w", err)
		}
		return body, nil
	default:
		return nil, fmt.Errorf("%w %q", ErrUnknownEncoding, encoding)
	}
}
