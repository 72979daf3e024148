//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package main

import "os"

// isTTY is false where toolhost cannot tell: a call that needs approval
// then ends approval_required unless --approve is given.
func isTTY(*os.File) bool { return false }
