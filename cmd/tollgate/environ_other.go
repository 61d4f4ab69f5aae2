//go:build !linux

package main

// hideEnviron does nothing where there is no /proc/PID/environ to hide.
func hideEnviron() {}
