// Package frame is the wire format of the relay: a small fixed binary header
// (query, edge, sender, receiver, epoch, sequence, chunk) in front of every
// message, the bodies of progress and credit frames, and the Arrow IPC encoding
// of data bodies.
//
// Decoding never trusts its input: every length is checked against what is
// really there and every failure is an error wrapping ErrMalformed, never a
// panic, because frames arrive from other processes over the network. The
// package knows nothing of NATS or of the dataflow; it must not import either.
package frame

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("malformed relay frame")

// ErrVersion is wrapped (with ErrMalformed) by the error for a frame of
// another header version: a peer built from another release, which a link
// refuses by name rather than as garbage.
var ErrVersion = errors.New("frame version")

// Magic opens every frame ("TF"), so a stray publisher on a relay subject is
// recognised instead of being parsed as garbage.
const Magic uint16 = 0x5446

// Version is the header layout version; a peer with another layout is refused.
// Version 3 added the resend frame: a version-2 receiver fails a link on a
// lost message where a version-3 one asks for it again, so the two do not mix.
// Version 4 added FlagFrontier: a version-3 receiver would take the frontier's
// trailer for part of the Arrow body.
// Version 5 (c26e93a, backed out to 4 by 86ee0d0) made an ack carry the
// receiver's grant as its body. Version 6 makes acks ride on credit
// instead: a credit frame acknowledges every message up to its Seq, an
// ack has no body, and an ack or credit frame carries in Epoch how long
// (ns) the receiver held the newest message it acknowledges before saying
// so (QUIC's ack delay). A version-4 sender would ignore the one and read
// the other's delayed acks as a slow link, and a version-5 one would take
// a bodiless ack for a malformed frame and never see an ack: each is
// refused by its version.
// Version 7 grants bytes as well as messages (Credit): a version-6 sender
// would take the 16-byte credit body for a malformed frame.
const Version uint8 = 7

// Kind says what a frame carries.
type Kind uint8

// Frame kinds. Data, Progress and End travel sender -> receiver on the data
// path and carry sequence numbers; Hello too but without a sequence; Credit,
// Close, Ack and Resend travel receiver -> sender.
const (
	KindData     Kind = 1 // body: Arrow IPC stream of one record
	KindProgress Kind = 2 // no body: Epoch is the sender's new frontier
	KindEnd      Kind = 3 // no body: the sender closed the link
	KindHello    Kind = 4 // no body: a sender asks for its current credit
	KindCredit   Kind = 5 // body: cumulative credit grant (EncodeCredit, Credit); Seq, Epoch, Ingest as an ack's
	KindClose    Kind = 6 // no body: the receiver closed the link
	KindAck      Kind = 7 // no body: the receiver has every message up to Seq in whole, the newest since Epoch ns
	KindResend   Kind = 8 // no body: Seq is the first message the receiver lacks; send again from it
	kindMax           = KindResend
)

func (k Kind) String() string {
	switch k {
	case KindData:
		return "data"
	case KindProgress:
		return "progress"
	case KindEnd:
		return "end"
	case KindHello:
		return "hello"
	case KindCredit:
		return "credit"
	case KindClose:
		return "close"
	case KindAck:
		return "ack"
	case KindResend:
		return "resend"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// MaxQueryLen bounds the query id so it fits the one-byte length prefix.
const MaxQueryLen = 255

// MaxChunks bounds how many chunks one message may be cut into; with the
// smallest sensible max payload (1 KiB) it still allows messages of 4 GiB.
const MaxChunks = 1 << 22

// fixedLen is the header length without the query bytes:
// magic(2) version(1) kind(1) flags(1) qlen(1) edge(4) sender(4) receiver(4)
// epoch(8) seq(8) chunk(4) chunks(4) total(8) ingest(8).
const fixedLen = 2 + 1 + 1 + 1 + 1 + 4 + 4 + 4 + 8 + 8 + 4 + 4 + 8 + 8

// Flags qualify a frame.
type Flags uint8

// FlagSchema marks a data message whose body starts with the Arrow schema: the
// first batch of a link, or the first after the schema changed. Later batches
// of the same schema carry only the record batch message.
const FlagSchema Flags = 1

// FlagFrontier marks a data message that also carries the link's progress:
// the sender's frontier once this batch is sent, as FrontierLen bytes at
// the end of the body (AppendFrontier, SplitFrontier). Most batches are
// followed by a frontier advance at once (a source's watermark, an
// operator's step), and carried here it costs no message of its own, no
// credit and no ack.
const FlagFrontier Flags = 2

const knownFlags = FlagSchema | FlagFrontier

// FrontierLen is the length of the frontier trailer of a FlagFrontier body.
const FrontierLen = 8

// AppendFrontier appends the frontier trailer of a FlagFrontier body.
func AppendFrontier(dst []byte, frontier uint64) []byte {
	return binary.BigEndian.AppendUint64(dst, frontier)
}

// SplitFrontier takes the frontier trailer off a FlagFrontier body (the
// whole body, after reassembly) and returns the Arrow part and the
// frontier.
func SplitFrontier(body []byte) ([]byte, uint64, error) {
	if len(body) < FrontierLen {
		return nil, 0, fmt.Errorf("%w: a body of %d bytes has no room for its %d-byte frontier", ErrMalformed, len(body), FrontierLen)
	}
	n := len(body) - FrontierLen
	return body[:n:n], binary.BigEndian.Uint64(body[n:]), nil
}

// Header is the part of every frame that names its link and its place in the
// link's stream.
type Header struct {
	Kind     Kind
	Flags    Flags
	Query    string
	Edge     uint32
	Sender   uint32
	Receiver uint32
	Epoch    uint64 // data: the batch's timestamp; progress: the new frontier; ack, credit: the ack delay (ns)
	Seq      uint64 // 1, 2, ... per link for data, progress and end frames; ack, credit: acknowledged up to
	Chunk    uint32 // index of this chunk, < Chunks
	Chunks   uint32 // number of chunks of this message, >= 1
	Total    uint64 // body length summed over all chunks
	// Ingest is, for data, when the batch's rows entered the query (Unix
	// ns, 0: unknown): end-to-end latency survives the hop between workers.
	// For an ack or a credit frame it is the longest the receiving worker kept a batch of
	// the link until its result since the previous ack (ns, 0: none
	// measured; relay.ResidenceReporter).
	Ingest int64
}

// Len is the encoded length of h: the fields, then zeros up to a multiple of
// 8 bytes, so that a body in a freshly allocated message is 8-byte aligned and
// Arrow buffers can be used where they lie.
func (h *Header) Len() int { return paddedLen(len(h.Query)) }

func paddedLen(qlen int) int { return (fixedLen + qlen + 7) &^ 7 }

// Put writes h at the start of b, which must be at least h.Len() bytes long,
// and returns the number of bytes written.
func (h *Header) Put(b []byte) int {
	_ = b[h.Len()-1]
	binary.BigEndian.PutUint16(b[0:], Magic)
	b[2] = Version
	b[3] = byte(h.Kind)
	b[4] = byte(h.Flags)
	b[5] = byte(len(h.Query))
	n := 6 + copy(b[6:], h.Query)
	binary.BigEndian.PutUint32(b[n:], h.Edge)
	binary.BigEndian.PutUint32(b[n+4:], h.Sender)
	binary.BigEndian.PutUint32(b[n+8:], h.Receiver)
	binary.BigEndian.PutUint64(b[n+12:], h.Epoch)
	binary.BigEndian.PutUint64(b[n+20:], h.Seq)
	binary.BigEndian.PutUint32(b[n+28:], h.Chunk)
	binary.BigEndian.PutUint32(b[n+32:], h.Chunks)
	binary.BigEndian.PutUint64(b[n+36:], h.Total)
	binary.BigEndian.PutUint64(b[n+44:], uint64(h.Ingest))
	end := h.Len()
	clear(b[n+52 : end])
	return end
}

// Validate reports whether h could be encoded and decoded again.
func (h *Header) Validate() error {
	switch {
	case h.Kind == 0 || h.Kind > kindMax:
		return fmt.Errorf("%w: unknown kind %d", ErrMalformed, uint8(h.Kind))
	case h.Flags&^knownFlags != 0 || (h.Flags != 0 && h.Kind != KindData):
		return fmt.Errorf("%w: flags %#x on a %s frame", ErrMalformed, uint8(h.Flags), h.Kind)
	case len(h.Query) > MaxQueryLen:
		return fmt.Errorf("%w: query id of %d bytes, at most %d", ErrMalformed, len(h.Query), MaxQueryLen)
	case h.Chunks == 0 || h.Chunks > MaxChunks:
		return fmt.Errorf("%w: %d chunks, want 1..%d", ErrMalformed, h.Chunks, MaxChunks)
	case h.Chunk >= h.Chunks:
		return fmt.Errorf("%w: chunk %d of %d", ErrMalformed, h.Chunk, h.Chunks)
	}
	return nil
}

// Append appends the encoding of h and body to dst. It is the simple path for
// small frames; data frames are built in place by the sender.
func Append(dst []byte, h Header, body []byte) []byte {
	n := len(dst)
	dst = append(dst, make([]byte, h.Len())...)
	h.Put(dst[n:])
	return append(dst, body...)
}

// Decode parses the header at the start of b and returns it with the rest of b,
// the chunk body. The body aliases b.
func Decode(b []byte) (Header, []byte, error) { return DecodeQuery(b, "") }

// DecodeQuery is Decode for a receiver that expects query: when the frame
// names that query, the header shares the string instead of allocating a
// copy per frame. Any other query decodes as with Decode.
func DecodeQuery(b []byte, query string) (Header, []byte, error) {
	var h Header
	if len(b) < fixedLen {
		return h, nil, fmt.Errorf("%w: %d bytes, a header needs at least %d", ErrMalformed, len(b), fixedLen)
	}
	if m := binary.BigEndian.Uint16(b); m != Magic {
		return h, nil, fmt.Errorf("%w: bad magic %#04x", ErrMalformed, m)
	}
	if v := b[2]; v != Version {
		return h, nil, fmt.Errorf("%w: %w %d, this build speaks %d", ErrMalformed, ErrVersion, v, Version)
	}
	h.Kind = Kind(b[3])
	h.Flags = Flags(b[4])
	qlen := int(b[5])
	hlen := paddedLen(qlen)
	if len(b) < hlen {
		return h, nil, fmt.Errorf("%w: %d bytes, header with a %d-byte query id needs %d", ErrMalformed, len(b), qlen, hlen)
	}
	for _, z := range b[fixedLen+qlen : hlen] {
		if z != 0 {
			return h, nil, fmt.Errorf("%w: header padding is not zero", ErrMalformed)
		}
	}
	if q := b[6 : 6+qlen]; string(q) == query { // compared without a copy
		h.Query = query
	} else {
		h.Query = string(q)
	}
	n := 6 + qlen
	h.Edge = binary.BigEndian.Uint32(b[n:])
	h.Sender = binary.BigEndian.Uint32(b[n+4:])
	h.Receiver = binary.BigEndian.Uint32(b[n+8:])
	h.Epoch = binary.BigEndian.Uint64(b[n+12:])
	h.Seq = binary.BigEndian.Uint64(b[n+20:])
	h.Chunk = binary.BigEndian.Uint32(b[n+28:])
	h.Chunks = binary.BigEndian.Uint32(b[n+32:])
	h.Total = binary.BigEndian.Uint64(b[n+36:])
	h.Ingest = int64(binary.BigEndian.Uint64(b[n+44:]))
	if err := h.Validate(); err != nil {
		return h, nil, err
	}
	body := b[hlen:]
	if uint64(len(body)) > h.Total {
		return h, nil, fmt.Errorf("%w: chunk body of %d bytes exceeds the message total %d", ErrMalformed, len(body), h.Total)
	}
	if h.Chunks == 1 && uint64(len(body)) != h.Total {
		return h, nil, fmt.Errorf("%w: single-chunk body of %d bytes, header says %d", ErrMalformed, len(body), h.Total)
	}
	if h.Kind != KindData && h.Chunks != 1 {
		return h, nil, fmt.Errorf("%w: %s frame in %d chunks (only data is chunked)", ErrMalformed, h.Kind, h.Chunks)
	}
	switch h.Kind {
	case KindProgress, KindEnd, KindHello, KindClose, KindAck, KindResend:
		if h.Total != 0 {
			return h, nil, fmt.Errorf("%w: %s frame with a %d-byte body", ErrMalformed, h.Kind, h.Total)
		}
	case KindCredit:
		if h.Total != CreditLen {
			return h, nil, fmt.Errorf("%w: credit body of %d bytes, want %d", ErrMalformed, h.Total, CreditLen)
		}
	}
	return h, body, nil
}

// CreditLen is the length of a credit frame's body.
const CreditLen = 16

// Credit is what a credit frame grants, both counts cumulative since the
// link opened, so a repeated or reordered grant is harmless: Messages
// (data, progress) and the data messages' body Bytes (Header.Total). A
// sender may start a message while it has sent fewer of each than granted,
// so one message larger than the whole byte grant still goes. Bytes 0: no
// bound by bytes (a receiver whose window is fixed in messages).
type Credit struct {
	Messages uint64
	Bytes    uint64
}

// EncodeCredit appends the body of a credit frame.
func EncodeCredit(dst []byte, c Credit) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(dst, c.Messages), c.Bytes)
}

// DecodeCredit parses a credit frame body.
func DecodeCredit(b []byte) (Credit, error) {
	if len(b) != CreditLen {
		return Credit{}, fmt.Errorf("%w: credit body of %d bytes, want %d", ErrMalformed, len(b), CreditLen)
	}
	return Credit{Messages: binary.BigEndian.Uint64(b), Bytes: binary.BigEndian.Uint64(b[8:])}, nil
}
