//go:build darwin || freebsd || netbsd || openbsd

package main

import "golang.org/x/sys/unix"

// ioctlGetTermios: see tty_linux.go.
const ioctlGetTermios = unix.TIOCGETA
