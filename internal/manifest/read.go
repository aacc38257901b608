package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// extensions are the files of a directory that -f reads, as kubectl's.
var extensions = []string{".yaml", ".yml", ".json"}

// ErrNoObject says that what -f names holds no object: empty files, or
// nothing but comments.
var ErrNoObject = errors.New("holds no object")

// Object is one object of a manifest file.
type Object struct {
	// Obj is the object as the file has it.
	Obj *unstructured.Unstructured
	// Source names it in messages: the file, and its place there when the
	// file holds several objects, as "a.yaml (object 2)".
	Source string
}

// Read reads the objects of -f path: a YAML or JSON file of one or more
// objects, the manifest files of a directory (Files), or stdin when path
// is "-". Each object must have an apiVersion, a kind and a
// metadata.name (Decode), and there must be one at least: if not, the
// error wraps ErrNoObject. Its errors start "-f PATH:", as the user reads
// them.
func Read(path string, stdin io.Reader) ([]Object, error) {
	var out []Object
	if path == "-" {
		data, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("-f -: %w", err)
		}
		if out, err = Decode(path, data); err != nil {
			return nil, fmt.Errorf("-f %w", err)
		}
	} else {
		files, err := Files(path)
		if err != nil {
			return nil, err
		}
		for _, file := range files {
			objs, err := readFile(file)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-f %s: %w", path, ErrNoObject)
	}
	return out, nil
}

// readFile reads the objects of one file of -f.
func readFile(file string) ([]Object, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("-f %s: %w", file, err)
	}
	objs, err := Decode(file, data)
	if err != nil {
		return nil, fmt.Errorf("-f %w", err)
	}
	return objs, nil
}

// Files returns the manifest files of -f path: path when it is a file;
// when it is a directory, its files (not its subdirectories') whose names
// end in .yaml, .yml or .json, in any case, in name order, and at least
// one. Its errors start "-f PATH:", as the user reads them.
func Files(path string) ([]string, error) {
	info, err := os.Stat(path)
	if pathErr := (*fs.PathError)(nil); errors.As(err, &pathErr) {
		// Without "stat PATH", which the message names already.
		return nil, fmt.Errorf("-f %s: %w", path, pathErr.Err)
	}
	if err != nil {
		return nil, fmt.Errorf("-f %s: %w", path, err)
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("-f %s: %w", path, err)
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && slices.Contains(extensions, strings.ToLower(filepath.Ext(e.Name()))) {
			files = append(files, filepath.Join(path, e.Name()))
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("-f %s: the directory holds no .yaml, .yml or .json file", path)
	}
	return files, nil // os.ReadDir sorts by name
}

// Decode decodes the objects of data, read from source: a YAML stream or
// JSON, one object or several in a row. Empty documents do not count.
// Each object must have an apiVersion, a kind and a metadata.name. When
// data holds several, each one's Source says which it is: "source (object
// N)". Its errors start with source, or with the Source of the object.
func Decode(source string, data []byte) ([]Object, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []map[string]any
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: not a YAML or JSON object: %w", source, err)
		}
		if len(obj) > 0 {
			objs = append(objs, obj)
		}
	}
	out := make([]Object, 0, len(objs))
	for i, obj := range objs {
		m := Object{Obj: &unstructured.Unstructured{Object: obj}, Source: source}
		if len(objs) > 1 {
			m.Source = fmt.Sprintf("%s (object %d)", source, i+1)
		}
		switch {
		case m.Obj.GetAPIVersion() == "" || m.Obj.GetKind() == "":
			return nil, fmt.Errorf("%s: the object has no apiVersion or kind", m.Source)
		case m.Obj.GetName() == "":
			return nil, fmt.Errorf("%s: the object has no metadata.name", m.Source)
		}
		out = append(out, m)
	}
	return out, nil
}
