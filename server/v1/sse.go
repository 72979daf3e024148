package v1

import (
	"errors"
	"net/http"
)

// sseWriter is the one server-sent-events writer of the three streaming
// formats: the headers go out with the first event, every event is
// flushed as it is written. Chat Completions writes data-only events;
// Messages and Responses name each event.
type sseWriter struct {
	w       http.ResponseWriter
	started bool // headers written: an error can no longer be a status
}

func (s *sseWriter) start() {
	if s.started {
		return
	}
	s.started = true
	hd := s.w.Header()
	hd.Set("Content-Type", "text/event-stream; charset=utf-8")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
}

// write writes one event: "event: NAME" when name is set, then v as one
// data line of JSON.
func (s *sseWriter) write(name string, v any) error {
	b, err := marshal(v)
	if err != nil {
		return err
	}
	return s.writeRaw(name, b)
}

// writeRaw writes one event whose data is b as it is ("[DONE]").
func (s *sseWriter) writeRaw(name string, b []byte) error {
	s.start()
	buf := make([]byte, 0, len(b)+len(name)+16)
	if name != "" {
		buf = append(append(append(buf, "event: "...), name...), '\n')
	}
	buf = append(append(append(buf, "data: "...), b...), '\n', '\n')
	if _, err := s.w.Write(buf); err != nil {
		return err
	}
	if err := http.NewResponseController(s.w).Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}
