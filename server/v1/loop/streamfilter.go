package loop

import "strings"

// streamFilter turns one round's upstream deltas into events: text flows,
// caller calls flow with their own numbering, hosted call deltas are held
// back. A call to an invented name is held back too while the loop may
// still run it; once the round is known to end the loop (the final round,
// or a caller call began) it goes to the caller like a caller call, so the
// caller's calls keep the model's order.
type streamFilter struct {
	round       int
	names       callNames
	emit        Sink
	ending      bool // the round ends the loop: invented calls are the caller's
	calls       map[int]*streamedCall
	held        []*streamedCall // invented calls not sent yet, in the model's order
	callerCount int
}

type streamedCall struct {
	known       bool
	hosted      bool // never sent: its deltas are dropped
	held        bool // invented, while the round may still run it
	callerIndex int
	id          string
	name        string
	args        strings.Builder // pieces not sent yet
}

func newStreamFilter(round int, final bool, n callNames, emit Sink) *streamFilter {
	return &streamFilter{round: round, ending: final, names: n, emit: emit, calls: map[int]*streamedCall{}}
}

func (f *streamFilter) delta(d Delta) error {
	switch {
	case d.Meta != nil:
		return f.emit(Event{Kind: EventUpstreamMeta, Round: f.round, ID: d.Meta.ID, Created: d.Meta.Created, Model: d.Meta.Model})
	case d.Text != "":
		return f.emit(Event{Kind: EventTextDelta, Round: f.round, Text: d.Text})
	case d.Extra != nil:
		return f.emit(Event{Kind: EventDeltaExtra, Round: f.round, Extra: d.Extra, Dialect: d.Dialect})
	case d.Tool != nil:
		return f.tool(d.Tool)
	}
	return nil
}

func (f *streamFilter) tool(t *ToolDelta) error {
	s, ok := f.calls[t.Index]
	if !ok {
		s = &streamedCall{}
		f.calls[t.Index] = s
	}
	if t.ID != "" {
		s.id = t.ID
	}
	if !s.known && t.Name == "" {
		s.args.WriteString(t.Args)
		return nil
	}
	if s.known {
		if s.hosted {
			return nil
		}
		if s.held {
			s.args.WriteString(t.Args)
			return nil
		}
		if t.Args == "" {
			return nil
		}
		return f.emit(Event{Kind: EventCallerCallDelta, Round: f.round, CallerIndex: s.callerIndex, ArgsDelta: t.Args})
	}
	s.known, s.name = true, t.Name
	if f.names.hosted[t.Name] {
		s.hosted = true
		s.args.Reset()
		return nil
	}
	s.args.WriteString(t.Args)
	switch {
	case f.names.runs(t.Name) && !f.ending:
		s.held = true
		f.held = append(f.held, s)
		return nil
	case !f.names.runs(t.Name):
		// A caller call: the round ends the loop, so the invented calls
		// before it are the caller's too.
		f.ending = true
		if err := f.release(); err != nil {
			return err
		}
	}
	return f.send(s)
}

// send starts s as a caller call with the argument bytes it has so far.
func (f *streamFilter) send(s *streamedCall) error {
	s.held = false
	s.callerIndex = f.callerCount
	f.callerCount++
	args := s.args.String()
	s.args.Reset()
	return f.emit(Event{Kind: EventCallerCallDelta, Round: f.round, CallerIndex: s.callerIndex, CallID: s.id, Name: s.name, ArgsDelta: args})
}

// release sends the held invented calls as caller calls once a caller
// call shows the round ends the loop: they go back to the caller.
func (f *streamFilter) release() error {
	held := f.held
	f.held = nil
	for _, s := range held {
		if err := f.send(s); err != nil {
			return err
		}
	}
	return nil
}
