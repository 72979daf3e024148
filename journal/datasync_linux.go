package journal

import (
	"os"
	"syscall"
)

// datasync flushes f's data to the disk without its metadata (fdatasync:
// the spool never depends on the file's times).
func datasync(f *os.File) error {
	return syscall.Fdatasync(int(f.Fd()))
}
