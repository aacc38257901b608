// Package streams carries a command's input and output streams and the
// error type that sets its exit code.
package streams

import (
	"errors"
	"io"
	"sync"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// IO are the streams a command reads from and writes to.
type IO struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// ExitUsage is the exit code of a wrong command line: bad flags or
// arguments.
const ExitUsage = 2

// ExitError is an error that ends the command with a given exit code.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }

func (e *ExitError) Unwrap() error { return e.Err }

// UsageError returns err as an error of the command line: it ends the
// command with ExitUsage.
func UsageError(err error) error {
	return &ExitError{Code: ExitUsage, Err: err}
}

// ExitCode returns the exit code err ends a command with: 0 for nil, the
// code of an ExitError, 1 for any other error.
func ExitCode(err error) int {
	var exit *ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.Code
	default:
		return 1
	}
}

// AnnotationOwnLogger, set in a command's Annotations, says that the command
// sets up controller-runtime's logger itself.
const AnnotationOwnLogger = "fedwarden.io/own-logger"

// discardOnce guards controller-runtime's SetLogger, which two goroutines
// must not call at once (its Fulfill reads the promise unlocked): commands
// run concurrently in tests, and the logger belongs to the process.
var discardOnce sync.Once

// DiscardLibraryLogs points controller-runtime's logger, through which the
// client libraries log, at nothing: commands report their own errors. Only
// the first call in a process sets it.
func DiscardLibraryLogs() {
	discardOnce.Do(func() { ctrllog.SetLogger(logr.Discard()) })
}
