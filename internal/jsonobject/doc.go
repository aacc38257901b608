// Package jsonobject holds an object a cache keeps as JSON, compressed with
// a dictionary of its kind, beside the metadata its event handlers read,
// instead of as unstructured maps, which take several times the JSON
// (bench/RESULTS.md, "Cached copies held as JSON" and "Held objects
// compressed, labels as pairs").
package jsonobject
