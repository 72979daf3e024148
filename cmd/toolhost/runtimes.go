package main

import (
	"os"
	"path/filepath"
)

// runtimeDirs is where run_code's runtime files are looked for, in order.
// --runtimes (TOOLHOST_RUNTIMES), when given, is the only place. Otherwise
// the binary finds them however it is started — from a checkout, from an
// install, by Claude Desktop with some other working directory:
//
//  1. <folder of the executable>/runtimes   (an install: toolhost beside runtimes/)
//  2. <folder of the executable>/../runtimes (the checkout: bin/toolhost, runtimes/ from `make runtimes`)
//  3. <data>/runtimes
//  4. <user cache>/toolhost/runtimes         (e.g. ~/.cache/toolhost/runtimes)
//  5. ./runtimes                            (the working directory, as `go run` needs)
//
// Each file is taken from the first folder that holds it, so a runtime file
// added later (a pre-initialised image, say) is found the same way.
func runtimeDirs(c *common) []string {
	if c.runtimes != "" {
		return []string{absPath(c.runtimes)}
	}
	var dirs []string
	add := func(d string) {
		d = absPath(d)
		for _, have := range dirs {
			if have == d {
				return
			}
		}
		dirs = append(dirs, d)
	}
	if exe, err := os.Executable(); err == nil {
		if resolved, err := filepath.EvalSymlinks(exe); err == nil {
			exe = resolved
		}
		add(filepath.Join(filepath.Dir(exe), "runtimes"))
		add(filepath.Join(filepath.Dir(exe), "..", "runtimes"))
	}
	add(filepath.Join(c.data, "runtimes"))
	if cache, err := os.UserCacheDir(); err == nil {
		add(filepath.Join(cache, "toolhost", "runtimes"))
	}
	add("runtimes")
	return dirs
}

// absPath makes p absolute (against the working directory) and clean; on
// failure it returns p cleaned.
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return filepath.Clean(p)
}
