package fsmodel

import (
	"errors"
	"os"
	"path/filepath"
)

// PathDisk is a Disk at a path of the disk the file lives on.
type PathDisk string

// WriteAt writes p at off in place.
func (d PathDisk) WriteAt(p []byte, off int64) error {
	f, err := os.OpenFile(string(d), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(p, off)
	return errors.Join(err, f.Close())
}

// Truncate truncates the file to size.
func (d PathDisk) Truncate(size int64) error { return os.Truncate(string(d), size) }

// Replace writes content to a new file beside it and renames it over.
func (d PathDisk) Replace(content []byte) error {
	tmp := filepath.Join(filepath.Dir(string(d)), "."+filepath.Base(string(d))+".new")
	if err := os.WriteFile(tmp, content, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, string(d))
}
