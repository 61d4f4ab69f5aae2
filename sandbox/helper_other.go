//go:build !linux

package sandbox

import (
	"errors"
	"os/exec"
)

var errUnsupported = errors.New("the sandbox needs Linux")

func abi() int { return 0 }

func probe(string, bool) error { return errUnsupported }

func prepareAttr(*exec.Cmd) {}

// Main returns at once: there is no helper outside Linux.
func Main() { mainCalled.Store(true) }

func totalMemory() int64 { return 0 }

// RemoveSealed reports false: outside Linux nothing is sealed.
func RemoveSealed(string) (bool, error) { return false, nil }

// HoldSealed returns at once: outside Linux nothing is sealed.
func HoldSealed(string) (func(), error) { return func() {}, nil }
