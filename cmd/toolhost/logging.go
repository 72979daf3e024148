package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

// LogConfig is the "log" section of the config file.
type LogConfig struct {
	// CallSample is the fraction of successful tool calls that get a log
	// line (tool, status, duration, session, execution id) at info level:
	// 1 (the default) logs every call, 0.01 one in a hundred, 0 none. Calls
	// that fail, are refused or time out are always logged.
	CallSample *float64 `json:"call_sample"`
}

// callSample is the effective CallSample.
func (c LogConfig) callSample() float64 {
	if c.CallSample == nil {
		return 1
	}
	return *c.CallSample
}

// logFlags are the logging flags of the long-running commands.
type logFlags struct {
	format string
	level  string
}

func (l *logFlags) register(fs *flag.FlagSet, defaultLevel string) {
	fs.StringVar(&l.format, "log-format", "auto", "log line `FORMAT`: json, text, or auto (text when stderr is a terminal, json otherwise)")
	fs.StringVar(&l.level, "log-level", defaultLevel, "least `LEVEL` logged: debug, info, warn or error")
}

// logger builds the logger the flags describe, writing to w.
func (l *logFlags) logger(w io.Writer, cfg LogConfig) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.level)); err != nil {
		return nil, usageError{fmt.Errorf("--log-level %q: want debug, info, warn or error", l.level)}
	}
	if s := cfg.callSample(); s < 0 || s > 1 {
		return nil, usageError{fmt.Errorf("config log.call_sample %g: want a fraction from 0 to 1", s)}
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(l.format) {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "auto", "":
		if isTerminal(w) {
			return slog.New(slog.NewTextHandler(w, opts)), nil
		}
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usageError{fmt.Errorf("--log-format %q: want json, text or auto", l.format)}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
