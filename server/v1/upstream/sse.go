package upstream

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ReadSSE calls fn with the data of every server-sent event until a
// "[DONE]" event or the end of r. Only data fields are read (event names,
// ids and comments are not needed by either protocol); the data lines of
// one event are joined with "\n". A line, or the data of one event, over
// MaxEventBytes fails with ErrTooLarge. An error from fn ends the read and
// is returned as it is.
func ReadSSE(r io.Reader, fn func(data []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxEventBytes)
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if data == nil {
				continue
			}
			d := data
			data = nil
			if string(d) == "[DONE]" {
				return nil
			}
			if err := fn(d); err != nil {
				return err
			}
		case line[0] == ':':
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[5:], []byte(" "))
			if len(data)+len(v)+1 > MaxEventBytes {
				return fmt.Errorf("%w: one event's data passes %d bytes", ErrTooLarge, MaxEventBytes)
			}
			if data == nil {
				data = append([]byte{}, v...)
			} else {
				data = append(append(data, '\n'), v...)
			}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%w: a stream line passes %d bytes", ErrTooLarge, MaxEventBytes)
		}
		return err
	}
	// The body ended without a blank line after the last event.
	if data != nil && string(data) != "[DONE]" {
		return fn(data)
	}
	return nil
}
