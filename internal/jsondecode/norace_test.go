//go:build !race

package jsondecode

// raceDetector is true when the tests run with -race, under which
// sync.Pool drops a quarter of what it is given back.
const raceDetector = false
