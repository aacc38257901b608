// Package jsonobject holds an object a cache keeps as compact JSON beside
// the metadata its event handlers read, instead of as unstructured maps,
// which take several times the JSON (bench/RESULTS.md, "Cached copies held
// as JSON").
package jsonobject
