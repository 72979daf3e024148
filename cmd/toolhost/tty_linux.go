package main

import "golang.org/x/sys/unix"

// ioctlGetTermios is the request that reads a terminal's settings: it
// fails on anything that is not a terminal (/dev/null is a character
// device too).
const ioctlGetTermios = unix.TCGETS
