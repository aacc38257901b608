// Package streams carries a command's input and output streams and the
// error type that sets its exit code.
package streams

import "io"

// IO are the streams a command reads from and writes to.
type IO struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// ExitError is an error that ends the command with a given exit code.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }

func (e *ExitError) Unwrap() error { return e.Err }

// AnnotationOwnLogger, set in a command's Annotations, says that the command
// sets up controller-runtime's logger itself.
const AnnotationOwnLogger = "fedwarden.io/own-logger"
