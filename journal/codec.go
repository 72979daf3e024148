package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// The spool keeps writes in a binary form of its own rather than JSON: a
// write is encoded on every call's hot path, and json.Marshal of a Record
// re-validates and compacts every raw JSON field and base64-encodes the
// argument bytes. Every field is length-prefixed or fixed-width, so a
// decoder never reads past what a frame holds.

// codecVersion 3 added each event's kind after the face (one string per
// event, in order); a version 2 write has none, so its events are all
// transitions. Version 2 added the face after the events; a version 1
// write (a spool left by an older binary) held the face in the caller
// slot.
const codecVersion = 3

// appendWrite appends the encoding of w to b.
func appendWrite(b []byte, w Write) []byte {
	r := &w.Record
	b = append(b, codecVersion)
	b = appendBool(b, w.Insert)
	for _, s := range [...]string{r.ID, r.AccountID, r.KeyID, r.SessionID, r.FloorID, r.RunID, r.PageID} {
		b = appendString(b, s)
	}
	b = binary.AppendVarint(b, int64(r.Round))
	for _, s := range [...]string{r.CallID, r.CallerSlot, r.ProviderID, r.ProviderType, r.ToolName, r.ToolVersion, r.SideEffectLevel} {
		b = appendString(b, s)
	}
	b = appendBytes(b, r.ArgsRaw)
	b = appendBytes(b, r.Args)
	for _, s := range [...]string{r.ArgsDigest, r.IdempotencyKey, r.TraceID, string(r.Status), string(r.Lifecycle), string(r.Commit), string(r.State)} {
		b = appendString(b, s)
	}
	b = appendBytes(b, r.Result)
	for _, s := range [...]string{r.ResultText, r.ErrorCode, r.ErrorMessage, r.Summary} {
		b = appendString(b, s)
	}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(r.Units))
	b = appendBool(b, r.Truncated)
	b = binary.AppendVarint(b, int64(r.Duration))
	b = appendTime(b, r.StartedAt)
	b = appendTime(b, r.FinishedAt)
	for _, s := range [...]string{r.DeliveryMode} {
		b = appendString(b, s)
	}
	b = binary.AppendVarint(b, int64(r.AttemptNo))
	for _, s := range [...]string{r.RuntimeJobID, r.ReplayParentID, r.InstanceID} {
		b = appendString(b, s)
	}
	b = appendTime(b, r.CreatedAt)
	b = binary.AppendVarint(b, int64(r.Seq))
	b = binary.AppendUvarint(b, uint64(len(w.Events)))
	for _, e := range w.Events {
		b = binary.AppendVarint(b, int64(e.Seq))
		b = appendString(b, string(e.State))
		b = appendTime(b, e.At)
		b = appendBytes(b, e.Detail)
	}
	b = appendString(b, r.Face)
	for _, e := range w.Events {
		b = appendString(b, e.Kind)
	}
	return b
}

// errCodec is wrapped by every decoding failure.
var errCodec = errors.New("journal spool: bad write encoding")

// decodeWrite is the inverse of appendWrite. It copies what it keeps, so b
// may be reused.
func decodeWrite(b []byte) (Write, error) {
	d := decoder{b: b}
	v := d.byte()
	if (v < 1 || v > codecVersion) && d.err == nil {
		return Write{}, fmt.Errorf("%w: version %d", errCodec, v)
	}
	var w Write
	r := &w.Record
	w.Insert = d.bool()
	for _, p := range [...]*string{&r.ID, &r.AccountID, &r.KeyID, &r.SessionID, &r.FloorID, &r.RunID, &r.PageID} {
		*p = d.string()
	}
	r.Round = int(d.varint())
	for _, p := range [...]*string{&r.CallID, &r.CallerSlot, &r.ProviderID, &r.ProviderType, &r.ToolName, &r.ToolVersion, &r.SideEffectLevel} {
		*p = d.string()
	}
	r.ArgsRaw = d.bytes()
	r.Args = d.bytes()
	var status, lifecycle, commit, state string
	for _, p := range [...]*string{&r.ArgsDigest, &r.IdempotencyKey, &r.TraceID, &status, &lifecycle, &commit, &state} {
		*p = d.string()
	}
	r.Status, r.Lifecycle, r.Commit, r.State = Status(status), Lifecycle(lifecycle), Commit(commit), State(state)
	if r.ProviderType == providerCustom {
		r.ProviderType = ProviderPreset
	}
	r.Result = d.bytes()
	for _, p := range [...]*string{&r.ResultText, &r.ErrorCode, &r.ErrorMessage, &r.Summary} {
		*p = d.string()
	}
	r.Units = math.Float64frombits(d.uint64())
	r.Truncated = d.bool()
	r.Duration = time.Duration(d.varint())
	r.StartedAt = d.time()
	r.FinishedAt = d.time()
	r.DeliveryMode = d.string()
	r.AttemptNo = int(d.varint())
	for _, p := range [...]*string{&r.RuntimeJobID, &r.ReplayParentID, &r.InstanceID} {
		*p = d.string()
	}
	r.CreatedAt = d.time()
	r.Seq = int(d.varint())
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)) { // every event takes at least one byte
		d.fail("event count")
	}
	if n > 0 && d.err == nil {
		w.Events = make([]Event, n)
		for i := range w.Events {
			e := &w.Events[i]
			e.Seq = int(d.varint())
			e.State = State(d.string())
			e.At = d.time()
			e.Detail = d.bytes()
		}
	}
	if v == 1 {
		switch r.CallerSlot {
		case "mcp", "hosted", "cli":
			r.Face, r.CallerSlot = r.CallerSlot, ""
		}
	} else {
		r.Face = d.string()
	}
	if v >= 3 {
		for i := range w.Events {
			w.Events[i].Kind = d.string()
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return Write{}, d.err
	}
	return w, nil
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendBytes keeps nil and empty apart: a nil raw JSON field is SQL NULL.
func appendBytes(b []byte, v []byte) []byte {
	if v == nil {
		return binary.AppendUvarint(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(v))+1)
	return append(b, v...)
}

// appendTime keeps the zero time apart from any instant; instants are
// stored as Unix nanoseconds in UTC, as the stores read them back.
func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, 0)
	}
	b = append(b, 1)
	return binary.AppendVarint(b, t.UnixNano())
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errCodec, what)
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail("short")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) bool() bool {
	switch d.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail("bool")
	return false
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uint64() uint64 {
	if len(d.b) < 8 {
		d.fail("short")
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) take(n uint64) []byte {
	if n > uint64(len(d.b)) {
		d.fail("length")
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string { return string(d.take(d.uvarint())) }

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n == 0 || d.err != nil {
		return nil
	}
	return append([]byte{}, d.take(n-1)...)
}

func (d *decoder) time() time.Time {
	switch d.byte() {
	case 0:
		return time.Time{}
	case 1:
		return time.Unix(0, d.varint()).UTC()
	}
	d.fail("time")
	return time.Time{}
}
