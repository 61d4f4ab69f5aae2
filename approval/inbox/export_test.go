package inbox

// ErrNoPrincipal is the error of a decision that names nobody, for the
// external tests.
var ErrNoPrincipal = errNoPrincipal
