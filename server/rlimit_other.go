//go:build !unix

package server

// RaiseFileLimit does nothing where there is no RLIMIT_NOFILE.
func RaiseFileLimit() (uint64, error) { return 0, nil }
