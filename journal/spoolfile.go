package journal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// The spool's files. Each process writes its own segments,
// INSTANCE.N.spool, and holds an exclusive flock on INSTANCE.lock for as long
// as it lives: a lock that can be taken belongs to a process that is gone,
// and its segments are replayed by whoever takes it. A segment is a sequence
// of frames:
//
//	length  uint32 LE   (of seq + payload)
//	crc     uint32 LE   CRC-32C of seq + payload
//	seq     uint64 LE   position of the write in its process's spool
//	payload             appendWrite
//
// A process that dies while writing leaves at most one torn frame, at the
// end of its last segment; replay stops there.

const (
	frameHeader  = 8
	maxFrameBody = 64 << 20 // a write larger than this is refused
	segmentLimit = 8 << 20  // a segment is closed once it holds this much
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// errSpoolBroken is returned by writes after the spool could neither finish
// nor cut off a write and could not open a new segment either.
var errSpoolBroken = errors.New("journal spool: cannot write its files (see the earlier error); restart the server")

// segment is one closed spool file and the last sequence number in it.
type segment struct {
	path string
	last uint64
}

// spoolFiles is the appending side of one process's spool.
type spoolFiles struct {
	dir, instance string
	sync          bool // fdatasync every write
	lock          *os.File

	mu     sync.Mutex // guards everything below
	f      *os.File   // the open segment
	n      int        // its number
	size   int64
	last   uint64 // last seq written into f
	closed []segment
	writes int // write calls so far, for the tests
}

func segmentPath(dir, instance string, n int) string {
	return filepath.Join(dir, fmt.Sprintf("%s.%06d.spool", instance, n))
}

func lockPath(dir, instance string) string { return filepath.Join(dir, instance+".lock") }

// openSpoolFiles creates dir if needed, takes the lock of instance and
// opens its first segment.
func openSpoolFiles(dir, instance string, sync bool) (*spoolFiles, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal spool directory: %w", err)
	}
	lock, err := os.OpenFile(lockPath(dir, instance), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal spool lock: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("journal spool lock %s: %w", lock.Name(), err)
	}
	s := &spoolFiles{dir: dir, instance: instance, sync: sync, lock: lock}
	if err := s.openSegment(1); err != nil {
		lock.Close()
		return nil, err
	}
	return s, nil
}

// openSegment creates segment n; s.mu is held or s is not shared yet.
func (s *spoolFiles) openSegment(n int) error {
	f, err := os.OpenFile(segmentPath(s.dir, s.instance, n), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("journal spool segment: %w", err)
	}
	if s.sync {
		// The new name must survive a power cut too.
		if err := syncDir(s.dir); err != nil {
			f.Close()
			return err
		}
	}
	s.f, s.n, s.size = f, n, 0
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("journal spool directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("journal spool directory sync: %w", err)
	}
	return nil
}

// appendFrame appends the frame of (seq, payload) to b.
func appendFrame(b []byte, seq uint64, payload []byte) []byte {
	start := len(b)
	b = binary.LittleEndian.AppendUint32(b, uint32(8+len(payload)))
	b = binary.LittleEndian.AppendUint32(b, 0) // crc, below
	body := len(b)
	b = binary.LittleEndian.AppendUint64(b, seq)
	b = append(b, payload...)
	binary.LittleEndian.PutUint32(b[start+4:], crc32.Checksum(b[body:], crcTable))
	return b
}

// write appends frames (whose last sequence number is last) in one write
// call, synced when asked. A failed write is cut off again so the segment
// holds only whole frames; if even that fails, the segment is closed and
// the next write goes to a new one.
func (s *spoolFiles) write(frames []byte, last uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return errSpoolBroken
	}
	_, err := s.f.Write(frames)
	if err == nil && s.sync {
		err = datasync(s.f)
	}
	if err != nil {
		if terr := s.f.Truncate(s.size); terr != nil {
			s.rotate()
		}
		return fmt.Errorf("journal spool write: %w", err)
	}
	s.size += int64(len(frames))
	s.last = last
	s.writes++
	if s.size >= segmentLimit {
		s.rotate()
	}
	return nil
}

// rotate closes the open segment and opens the next; s.mu is held. When the
// next cannot be opened, writes fail until the process restarts: the spool
// never writes behind a frame it could not finish.
func (s *spoolFiles) rotate() {
	s.f.Close()
	s.closed = append(s.closed, segment{path: s.f.Name(), last: s.last})
	if err := s.openSegment(s.n + 1); err != nil {
		s.f = nil
	}
}

// release deletes the closed segments whose writes are all applied
// (sequence numbers below first, the oldest write not yet applied).
func (s *spoolFiles) release(first uint64) {
	s.mu.Lock()
	var gone []segment
	keep := s.closed[:0]
	for _, seg := range s.closed {
		if seg.last < first {
			gone = append(gone, seg)
		} else {
			keep = append(keep, seg)
		}
	}
	s.closed = keep
	s.mu.Unlock()
	for _, seg := range gone {
		os.Remove(seg.path)
	}
}

// close closes the files; with applied, every write is in the store, so the
// segments and the lock are deleted, else they stay for the next start.
func (s *spoolFiles) close(applied bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	if s.f != nil {
		errs = append(errs, s.f.Close())
		s.closed = append(s.closed, segment{path: s.f.Name(), last: s.last})
		s.f = nil
	}
	if applied {
		for _, seg := range s.closed {
			if err := os.Remove(seg.path); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		s.closed = nil
		errs = append(errs, os.Remove(s.lock.Name()))
	}
	errs = append(errs, s.lock.Close())
	return errors.Join(errs...)
}

// deadSpool is the spool a process left behind, taken over for replay.
type deadSpool struct {
	instance string
	lock     *os.File // held; nil when the lock file was already gone
	segments []string // in order
}

// deadSpools finds the spools in dir whose process is gone (their lock can
// be taken, or they have no lock file), other than instance's own, and
// takes their locks.
func deadSpools(dir, own string) ([]*deadSpool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal spool directory: %w", err)
	}
	segs := map[string][]string{}
	locks := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if inst, ok := strings.CutSuffix(name, ".lock"); ok {
			locks[inst] = true
			continue
		}
		rest, ok := strings.CutSuffix(name, ".spool")
		if !ok {
			continue
		}
		inst, num, ok := strings.Cut(rest, ".")
		if _, err := strconv.Atoi(num); !ok || err != nil {
			continue
		}
		segs[inst] = append(segs[inst], filepath.Join(dir, name))
	}
	var out []*deadSpool
	for inst := range unionKeys(segs, locks) {
		if inst == own {
			continue
		}
		ds := &deadSpool{instance: inst}
		if locks[inst] {
			f, err := os.OpenFile(lockPath(dir, inst), os.O_RDWR, 0)
			if err == nil {
				if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
					f.Close()
					continue // its process is alive
				}
				ds.lock = f
			} else if !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("journal spool lock: %w", err)
			}
		}
		// Segment numbers have a fixed width: names sort in write order.
		sort.Strings(segs[inst])
		ds.segments = segs[inst]
		out = append(out, ds)
	}
	sort.Slice(out, func(i, k int) bool { return out[i].instance < out[k].instance })
	return out, nil
}

func unionKeys[V any, W any](a map[string]V, b map[string]W) map[string]bool {
	u := map[string]bool{}
	for k := range a {
		u[k] = true
	}
	for k := range b {
		u[k] = true
	}
	return u
}

// readSegment returns the writes of a segment in order. A torn or corrupt
// frame ends the segment: what follows it is reported as skipped bytes.
func readSegment(path string) (ws []spooled, skipped int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("journal spool segment: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	r := bufio.NewReaderSize(f, 1<<16)
	var off int64
	var hdr [frameHeader]byte
	var body []byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			break
		}
		n := binary.LittleEndian.Uint32(hdr[:4])
		if n < 8 || n > maxFrameBody+8 {
			break
		}
		if cap(body) < int(n) {
			body = make([]byte, n)
		}
		body = body[:n]
		if _, err := io.ReadFull(r, body); err != nil {
			break
		}
		if crc32.Checksum(body, crcTable) != binary.LittleEndian.Uint32(hdr[4:]) {
			break
		}
		w, err := decodeWrite(body[8:])
		if err != nil {
			break
		}
		ws = append(ws, spooled{seq: binary.LittleEndian.Uint64(body[:8]), w: w})
		off += frameHeader + int64(n)
	}
	return ws, st.Size() - off, nil
}

// remove deletes the dead spool's files and gives up its lock.
func (d *deadSpool) remove(dir string) error {
	var errs []error
	for _, p := range d.segments {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if d.lock != nil {
		if err := os.Remove(lockPath(dir, d.instance)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		errs = append(errs, d.lock.Close())
	}
	return errors.Join(errs...)
}
