package jsonobject

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"sync"
)

// A dictionary compresses the JSON of the objects of one kind. The objects
// of a kind repeat most of their JSON (field names, defaults, images,
// labels), so that the JSON of the first one held, given to flate as a
// preset dictionary, leaves little but what each object has of its own
// (bench/RESULTS.md, "Held objects compressed, labels as pairs").
type dictionary struct {
	data []byte // never changed
	// Compressors and decompressors take hundreds of KB each: they are
	// reused, until a garbage collection drops them.
	writers, readers sync.Pool
}

// dictionaries holds one dictionary per kind (apiVersion and kind), each
// made of the first object of the kind held: at most a few KB per kind.
var dictionaries sync.Map // string → *dictionary

// maxDictionary is the most of an object's JSON a dictionary takes: flate
// looks back at most 32 KB.
const maxDictionary = 32 << 10

// dictionaryFor returns kind's dictionary, made of first, which it keeps,
// if kind has none yet.
func dictionaryFor(kind string, first []byte) *dictionary {
	if d, ok := dictionaries.Load(kind); ok {
		return d.(*dictionary)
	}
	if len(first) > maxDictionary {
		first = first[len(first)-maxDictionary:]
	}
	d, _ := dictionaries.LoadOrStore(kind, &dictionary{data: first})
	return d.(*dictionary)
}

// compress returns data compressed with the dictionary.
func (d *dictionary) compress(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	w, _ := d.writers.Get().(*flate.Writer)
	if w == nil {
		var err error
		if w, err = flate.NewWriterDict(&buf, flate.DefaultCompression, d.data); err != nil {
			return nil, err
		}
	} else {
		w.Reset(&buf)
	}
	if _, err := w.Write(data); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	d.writers.Put(w)
	return bytes.Clone(buf.Bytes()), nil
}

// decompress returns what compress was given.
func (d *dictionary) decompress(data []byte) ([]byte, error) {
	r, _ := d.readers.Get().(io.ReadCloser)
	if r == nil {
		r = flate.NewReader(bytes.NewReader(data))
	}
	if err := r.(flate.Resetter).Reset(bytes.NewReader(data), d.data); err != nil {
		return nil, err
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("decompressing: %w", err)
	}
	d.readers.Put(r)
	return out, nil
}
