package localfed

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// tailBytes is how much of a process's recent output is kept in memory.
const tailBytes = 64 << 10

// logSink hands out the writer each process logs to.
type logSink struct {
	mu     sync.Mutex
	shared io.Writer // nil: one file per process
}

// open returns the log of the process called name, whose file is path
// unless every process logs to the shared writer.
func (s *logSink) open(name, path string) (io.WriteCloser, error) {
	if s.shared != nil {
		return &prefixWriter{sink: s, prefix: []byte("[" + name + "] ")}, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating log directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening log: %w", err)
	}
	return f, nil
}

// prefixWriter writes whole lines, each prefixed, to the shared writer of a
// sink, so that the lines of concurrent processes do not mix.
type prefixWriter struct {
	sink    *logSink
	prefix  []byte
	partial []byte
}

func (w *prefixWriter) Write(p []byte) (int, error) {
	w.partial = append(w.partial, p...)
	i := bytes.LastIndexByte(w.partial, '\n')
	if i < 0 {
		return len(p), nil
	}
	lines := w.partial[:i+1]
	w.partial = append([]byte(nil), w.partial[i+1:]...)
	var out []byte
	for line := range bytes.Lines(lines) {
		out = append(append(out, w.prefix...), line...)
	}
	w.sink.mu.Lock()
	defer w.sink.mu.Unlock()
	if _, err := w.sink.shared.Write(out); err != nil {
		return 0, fmt.Errorf("writing log: %w", err)
	}
	return len(p), nil
}

// Close flushes an unterminated last line.
func (w *prefixWriter) Close() error {
	if len(w.partial) == 0 {
		return nil
	}
	_, err := w.Write([]byte("\n"))
	return err
}

// tailBuffer keeps the end of a stream of output.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func newTailBuffer() *tailBuffer { return &tailBuffer{} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*tailBytes {
		n := copy(t.buf, t.buf[len(t.buf)-tailBytes:])
		t.buf = t.buf[:n]
	}
	return len(p), nil
}

// lastLines returns at most the last n lines written.
func (t *tailBuffer) lastLines(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	buf := bytes.TrimRight(t.buf, "\n")
	start := len(buf)
	for range n {
		i := bytes.LastIndexByte(buf[:start], '\n')
		if i < 0 {
			return string(buf)
		}
		start = i
	}
	return string(buf[start+1:])
}
