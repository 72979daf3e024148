//go:build !linux

package journal

import "os"

// datasync flushes f to the disk; systems without fdatasync sync the
// metadata too.
func datasync(f *os.File) error {
	return f.Sync()
}
