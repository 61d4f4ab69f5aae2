package storeimpl

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/nofollow"
)

// maxKeyFile is the largest key file read, in bytes.
const maxKeyFile = 1024

// LoadDecisionKey returns the decision key kept in the file at path: 64
// hexadecimal digits (32 bytes), a final newline allowed.
// When the file does not exist it is made, with a new random key, mode 0600
// (its directory 0700), atomically: of several processes that start at once,
// all get the one key written first. Errors name the path: a symbolic link
// at its end or anything but a regular file; a file that its group or others
// may read or write (the key decides what the store trusts: chmod 600 it);
// content that is not a key.
func LoadDecisionKey(path string) ([]byte, error) {
	key, err := readDecisionKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	if err := createDecisionKey(path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("decision key %s: %w", path, err)
	}
	return readDecisionKey(path)
}

func readDecisionKey(path string) ([]byte, error) {
	if _, err := os.Lstat(path); err != nil {
		return nil, err
	}
	f, err := nofollow.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("decision key: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("decision key %s: %w", path, err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("decision key %s: mode %04o lets other users read or write it; make it the owner's only (chmod 600 %s)", path, fi.Mode().Perm(), path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("decision key %s: %w", path, err)
	}
	text := strings.TrimSuffix(string(b), "\n")
	key, err := hex.DecodeString(text)
	if err != nil || len(key) != keySize {
		return nil, fmt.Errorf("decision key %s: want %d hexadecimal digits (%d random bytes), found %d bytes of something else",
			path, 2*keySize, keySize, len(b))
	}
	return key, nil
}

// createDecisionKey writes a new key to a temporary file beside path and
// links it at path, which fails with fs.ErrExist when another process was
// first.
func createDecisionKey(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	key := make([]byte, keySize)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".decision-key-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.WriteString(hex.EncodeToString(key) + "\n"); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Link(tmp.Name(), path)
}
