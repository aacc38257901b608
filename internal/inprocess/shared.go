package inprocess

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/fedwarden/fedwarden/internal/localfed"
)

// startTimeout bounds Start and Setup of a shared bed together.
const startTimeout = 5 * time.Minute

// Shared is a Bed that the tests of one package share: the first test that
// asks for it starts it, and Run, from TestMain, stops it.
type Shared struct {
	// Name is given to Start.
	Name string
	// Federation are the options of the federation.
	Federation []localfed.Option
	// Setup makes the started bed ready for the tests: it starts the manager
	// and joins the members, for example. A bed it fails to set up is
	// stopped.
	Setup func(ctx context.Context, b *Bed) error

	once sync.Once
	bed  *Bed
	err  error
}

// Bed returns the shared bed, starting it on the first call. It skips the
// test in -short mode, and fails it when the bed could not be started.
func (s *Shared) Bed(t *testing.T) *Bed {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real etcd and kube-apiserver processes")
	}
	s.once.Do(func() {
		begin := time.Now()
		s.bed, s.err = s.start()
		t.Logf("the shared test bed started in %s", time.Since(begin).Round(time.Millisecond))
	})
	if s.err != nil {
		t.Fatalf("setting up the shared test bed: %v", s.err)
	}
	return s.bed
}

func (s *Shared) start() (*Bed, error) {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	b, err := Start(ctx, s.Name, s.Federation...)
	if err != nil {
		return nil, err
	}
	if err := s.Setup(ctx, b); err != nil {
		return nil, errors.Join(err, b.Stop(true))
	}
	return b, nil
}

// Run runs the tests, then stops the bed if one started it. It returns the
// exit code for os.Exit: 1 when the bed did not stop cleanly (see
// Bed.Stop), even if every test passed.
func (s *Shared) Run(m *testing.M) int {
	code := m.Run()
	if s.bed != nil {
		if err := s.bed.Stop(code != 0); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the shared test bed: %v\n", err)
			code = 1
		}
	}
	return code
}
