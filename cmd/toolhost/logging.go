package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/toolhost/toolhost/internal/telemetry"
)

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
func (l *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.level)); err != nil {
		return nil, usageError{fmt.Errorf("--log-level %q: want debug, info, warn or error", l.level)}
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(l.format) {
	case "json":
		return slog.New(telemetry.LogHandler(slog.NewJSONHandler(w, opts))), nil
	case "text":
		return slog.New(telemetry.LogHandler(slog.NewTextHandler(w, opts))), nil
	case "auto", "":
		if isTerminal(w) {
			return slog.New(telemetry.LogHandler(slog.NewTextHandler(w, opts))), nil
		}
		return slog.New(telemetry.LogHandler(slog.NewJSONHandler(w, opts))), nil
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
