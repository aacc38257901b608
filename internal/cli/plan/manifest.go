package plan

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

// manifestObject is one object of -f: a Federated<Kind> to plan.
type manifestObject struct {
	obj *unstructured.Unstructured
	// file names it in messages: the file, and its place there when the
	// file holds several objects.
	file string
}

// manifestExtensions are the files of a directory -f reads, as kubectl's.
var manifestExtensions = []string{".yaml", ".yml", ".json"}

// readManifests reads the objects of -f: a YAML or JSON file of one or
// more objects, each file of a directory (not its subdirectories) whose
// name ends in .yaml, .yml or .json, in name order, or in when path is
// "-".
func readManifests(path string, in io.Reader) ([]*manifestObject, error) {
	if path == "-" {
		data, err := io.ReadAll(in)
		if err != nil {
			return nil, fmt.Errorf("-f -: %w", err)
		}
		objs, err := decodeAll(path, data)
		if err == nil && len(objs) == 0 {
			err = errors.New("-f -: holds no object; plan takes Federated<Kind> manifests")
		}
		return objs, err
	}
	files, err := manifestFiles(path)
	if err != nil {
		return nil, fmt.Errorf("-f %s: %w", path, err)
	}
	var out []*manifestObject
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("-f %s: %w", file, err)
		}
		objs, err := decodeAll(file, data)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-f %s: holds no object; plan takes Federated<Kind> manifests", path)
	}
	return out, nil
}

// manifestFiles is path, or the manifest files of the directory path.
func manifestFiles(path string) ([]string, error) {
	info, err := os.Stat(path)
	if pathErr := (*fs.PathError)(nil); errors.As(err, &pathErr) {
		return nil, pathErr.Err // the message names path already
	}
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && slices.Contains(manifestExtensions, strings.ToLower(filepath.Ext(e.Name()))) {
			files = append(files, filepath.Join(path, e.Name()))
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("the directory has no %s file", strings.Join(manifestExtensions, ", "))
	}
	return files, nil // os.ReadDir sorts by name
}

// decodeAll decodes the objects of file's data, YAML or JSON; each must
// have an apiVersion, a kind and a name.
func decodeAll(file string, data []byte) ([]*manifestObject, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []map[string]any
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("-f %s: not a YAML or JSON object: %w", file, err)
		}
		if len(obj) > 0 {
			objs = append(objs, obj)
		}
	}
	var out []*manifestObject
	for i, obj := range objs {
		m := &manifestObject{obj: &unstructured.Unstructured{Object: obj}, file: file}
		if len(objs) > 1 {
			m.file = fmt.Sprintf("%s (object %d)", file, i+1)
		}
		switch {
		case m.obj.GetAPIVersion() == "" || m.obj.GetKind() == "":
			return nil, fmt.Errorf("-f %s: the object has no apiVersion or kind", m.file)
		case m.obj.GetName() == "":
			return nil, fmt.Errorf("-f %s: the object has no metadata.name", m.file)
		}
		out = append(out, m)
	}
	return out, nil
}
