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
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// The encodings a stored body can be in; the column's CHECK names the same.
const (
	// Identity is the body as received.
	Identity = "identity"
	// Zstd is a Zstandard frame of the body, as releases before S2
	// stored it; it is read, no longer written.
	Zstd = "zstd"
	// S2 is the body's CRC-32C (Castagnoli, little-endian) followed by an
	// S2 block of the body. S2 packs a payload in a third of zstd's time
	// into a block about a quarter larger (3.2 KB against 2.4 KB for a
	// 15.5 KB issue comment, whose row fills one page either way): every
	// request waits on the time, and the checksum lets Unpack tell a
	// damaged row from a body, as zstd's did.
	S2 = "s2"
)

// MaxSize bounds what Unpack returns: above GitHub's 25 MB cap on a
// payload, so a body that was stored always comes back, and a frame that
// claims or grows to more is refused instead of filling memory.
const MaxSize = 64 << 20

// minSize is the smallest body worth compressing: below a page, a
// compressed body saves no page and costs a frame header.
const minSize = 1024

// crcSize is the length of the checksum in front of an S2 block.
const crcSize = 4

var (
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
	decoder    = mustDecoder(MaxSize)
)

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
	scratch := scratches.Get().(*[]byte)
	defer scratches.Put(scratch)
	if need := s2.MaxEncodedLen(len(body)); cap(*scratch) < need {
		*scratch = make([]byte, need)
	}
	packed := s2.Encode((*scratch)[:cap(*scratch)], body)
	if crcSize+len(packed) > len(body)-len(body)/8 {
		return body, Identity
	}
	// The row keeps only what it stores; the scratch space goes back.
	data = make([]byte, crcSize+len(packed))
	binary.LittleEndian.PutUint32(data, crc32.Checksum(body, castagnoli))
	copy(data[crcSize:], packed)
	return data, S2
}

// scratches holds room to encode into, as large as the largest body
// packed with it so far.
var scratches = sync.Pool{New: func() any { return new([]byte) }}

// ErrUnknownEncoding is returned for a body stored in an encoding this
// release does not read.
var ErrUnknownEncoding = errors.New("unknown body encoding")

// Unpack returns the body stored as data in encoding.
func Unpack(data []byte, encoding string) ([]byte, error) {
	return unpack(decoder, MaxSize, data, encoding)
}

func unpack(d *zstd.Decoder, limit int, data []byte, encoding string) ([]byte, error) {
	switch encoding {
	case Identity:
		return data, nil
	case Zstd:
		body, err := d.DecodeAll(data, nil)
		if err != nil {
			return nil, fmt.Errorf("decompressing stored body: %w", err)
		}
		return body, nil
	case S2:
		return unpackS2(data, limit)
	default:
		return nil, fmt.Errorf("%w %q", ErrUnknownEncoding, encoding)
	}
}

func unpackS2(data []byte, limit int) ([]byte, error) {
	if len(data) < crcSize {
		return nil, errors.New("decompressing stored body: shorter than its checksum")
	}
	block := data[crcSize:]
	size, err := s2.DecodedLen(block)
	if err != nil {
		return nil, fmt.Errorf("decompressing stored body: %w", err)
	}
	if size > limit {
		return nil, fmt.Errorf("decompressing stored body: it claims %d bytes, above the %d allowed", size, limit)
	}
	body, err := s2.Decode(make([]byte, size), block)
	if err != nil {
		return nil, fmt.Errorf("decompressing stored body: %w", err)
	}
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(data) {
		return nil, errors.New("decompressing stored body: checksum mismatch")
	}
	return body, nil
}
