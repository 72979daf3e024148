//go:build unix

package server

import "syscall"

// RaiseFileLimit lifts the soft limit on open files to the hard limit (the
// Go runtime does so at start on Linux already; this makes it explicit and
// reports the figure) and returns the limit in force. Every connection is a
// file descriptor: the connection caps must stay well below it.
func RaiseFileLimit() (uint64, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, err
	}
	if rl.Cur < rl.Max {
		rl.Cur = rl.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
			return 0, err
		}
	}
	return rl.Cur, nil
}
