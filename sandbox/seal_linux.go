//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// sealLockWait bounds how long a helper waits for the shared lock on a
// sealed directory's parent: [RemoveSealed] holds it exclusively only for
// one rmdir, so a longer wait means another process holds it, and the
// command is refused rather than left to hang.
const sealLockWait = 10 * time.Second

// sealRemoveWait bounds how long [RemoveSealed] waits for the shared locks
// on a sealed directory's parent to be let go: a command's helper lets go a
// moment after the command ends, and a process that forks while it holds
// the lock keeps it until its child execs. A lock held longer belongs to a
// command still running, and the directory is left.
const sealRemoveWait = 2 * time.Second

// HoldSealed takes a shared lock on the parent of dir, a directory that
// [Policy].Seal names, that keeps [RemoveSealed] from removing dir until
// release is called, as a running command's helper does. A host holds it
// for a whole run, so that a command killed mid-run is gone before dir
// may be removed. A parent that does not exist is not locked. The error
// says the parent could not be opened or stayed locked (by [RemoveSealed]
// elsewhere) longer than 10 s.
func HoldSealed(dir string) (release func(), err error) {
	fd, err := lockShared(dir)
	if err != nil || fd < 0 {
		return func() {}, err
	}
	var once sync.Once
	return func() { once.Do(func() { unix.Close(fd) }) }, nil
}

// lockShared opens the parent of dir, close-on-exec, and takes a shared
// flock(2) on it, waiting at most sealLockWait; -1 when the parent does not
// exist.
func lockShared(dir string) (int, error) {
	fd, err := unix.Open(filepath.Dir(dir), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return -1, nil
	}
	if err != nil {
		return -1, fmt.Errorf("sealing %s: opening its directory: %w", dir, err)
	}
	locked := make(chan error, 1)
	go func() { locked <- flock(fd, unix.LOCK_SH) }()
	select {
	case err := <-locked:
		if err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("sealing %s: locking its directory: %w", dir, err)
		}
		return fd, nil
	case <-time.After(sealLockWait):
		// The flock call may still succeed later: the descriptor is closed
		// when it returns, so that a lock granted after the wait is let go.
		go func() { <-locked; unix.Close(fd) }()
		return -1, fmt.Errorf("sealing %s: its directory stayed locked by another process for %s", dir, sealLockWait)
	}
}

// lockSealParents takes a shared flock(2) on the parent of each sealed
// directory, held by this helper (the init of the command's namespaces)
// until it exits, which it does after every process of the command when
// the command ends (a helper that is killed lets its lock go a moment
// before the kernel ends the rest of its namespace: the host's own
// [HoldSealed] covers that moment): while it is held, [RemoveSealed] leaves
// the directories in place. The descriptors are
// close-on-exec, so the command never holds them. A parent that does not
// exist is not locked (its seal is made with it).
func lockSealParents(seal []string) error {
	for _, d := range seal {
		if _, err := lockShared(d); err != nil {
			return err
		}
	}
	return nil
}

// flock is flock(2), tried again when a signal interrupts it.
func flock(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// RemoveSealed removes dir, a directory that [Policy].Seal named, when it
// is empty and no sandboxed command that seals it is running, here or in
// another process: each such command's helper holds a shared lock on dir's
// parent until the last process of the command has ended, and
// RemoveSealed removes dir only under an exclusive one, so no running
// command's read-only mount of dir is taken away (an rmdir(2) from
// another mount namespace would detach it, and the command could then
// create dir anew and write in it). It reports whether dir was removed: not
// when it is missing, not a directory, not empty, or in use. A host calls
// it when a run whose workspace lacked the directory ends, so that sealing
// leaves no trace (package internal/runbuild does).
func RemoveSealed(dir string) (bool, error) {
	fd, err := unix.Open(filepath.Dir(dir), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("sandbox: removing %s: %w", dir, err)
	}
	defer unix.Close(fd)
	if locked, err := lockExclusive(fd); err != nil {
		return false, fmt.Errorf("sandbox: removing %s: locking its directory: %w", dir, err)
	} else if !locked {
		return false, nil // a command that seals it runs
	}
	// Relative to the locked directory, so that the one locked is the one
	// changed. rmdir(2) removes only an empty directory, never a file or a
	// link.
	err = unix.Unlinkat(fd, filepath.Base(dir), unix.AT_REMOVEDIR)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTEMPTY), errors.Is(err, unix.EEXIST),
		errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.EBUSY):
		return false, nil
	default:
		return false, fmt.Errorf("sandbox: removing %s: %w", dir, err)
	}
}

// lockExclusive takes an exclusive flock(2) on fd, trying for at most
// sealRemoveWait; false when shared holders kept it that long. It never
// blocks in flock(2): a lock granted after the wait ended would be kept.
func lockExclusive(fd int) (bool, error) {
	deadline := time.Now().Add(sealRemoveWait)
	for {
		err := flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return err == nil, err
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}
