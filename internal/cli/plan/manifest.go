package plan

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// manifestObject is the Federated<Kind> of -f FILE.
type manifestObject struct {
	obj *unstructured.Unstructured
	// file names it in messages.
	file string
}

// readManifest reads the one object of the YAML or JSON file at path, or
// of in when path is "-".
func readManifest(path string, in io.Reader) (*manifestObject, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(in)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("-f %s: %w", path, err)
	}
	obj, err := decodeOne(data)
	if err != nil {
		return nil, fmt.Errorf("-f %s: %w", path, err)
	}
	return &manifestObject{obj: obj, file: path}, nil
}

// decodeOne decodes data, YAML or JSON, which must hold exactly one object
// with an apiVersion, a kind and a name.
func decodeOne(data []byte) (*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []map[string]any
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("not a YAML or JSON object: %w", err)
		}
		if len(obj) > 0 {
			objs = append(objs, obj)
		}
	}
	switch len(objs) {
	case 0:
		return nil, errors.New("holds no object; plan takes one Federated<Kind> manifest")
	case 1:
	default:
		return nil, fmt.Errorf("holds %d objects; plan takes one Federated<Kind> manifest", len(objs))
	}
	u := &unstructured.Unstructured{Object: objs[0]}
	switch {
	case u.GetAPIVersion() == "" || u.GetKind() == "":
		return nil, errors.New("the object has no apiVersion or kind")
	case u.GetName() == "":
		return nil, errors.New("the object has no metadata.name")
	}
	return u, nil
}
