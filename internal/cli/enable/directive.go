package enable

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/fedwarden/fedwarden/internal/manifest"
)

// directiveKind and directiveAPIVersion identify KubeFed's
// EnableTypeDirective.
const (
	directiveKind       = "EnableTypeDirective"
	directiveAPIVersion = "core.kubefed.io/v1beta1"
)

// directive is KubeFed's EnableTypeDirective: metadata.name is the
// resource[.group] to enable.
type directive struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		TargetVersion    string `json:"targetVersion,omitempty"`
		FederatedGroup   string `json:"federatedGroup,omitempty"`
		FederatedVersion string `json:"federatedVersion,omitempty"`
	} `json:"spec"`
}

// request is one type to enable, from the argument and flags or from a
// directive.
type request struct {
	resource         string
	targetVersion    string
	federatedGroup   string
	federatedVersion string
	source           string // the file it comes from, for messages; empty for the argument
}

// readDirectives reads the EnableTypeDirectives of each path: a file (a
// YAML stream or JSON) or a directory, whose .yaml, .yml and .json files
// are read in name order (manifest.Files).
func readDirectives(paths []string) ([]request, error) {
	var out []request
	for _, p := range paths {
		files, err := manifest.Files(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			reqs, err := readFile(f)
			if err != nil {
				return nil, err
			}
			out = append(out, reqs...)
		}
	}
	return out, nil
}

// readFile reads the directives of one file. It splits the file itself,
// not with manifest.Decode, since the strict parse needs each document's
// text, and its messages number documents as the file has them.
func readFile(path string) ([]request, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-f %s: %w", path, err)
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []request
	for i := 1; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: reading document %d: %w", path, i, err)
		}
		if empty(doc) {
			continue
		}
		req, err := parseDirective(doc)
		if err != nil {
			return nil, fmt.Errorf("%s, document %d: %w", path, i, err)
		}
		req.source = path
		out = append(out, req)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no %s", path, directiveKind)
	}
	return out, nil
}

// empty tells whether a YAML document holds nothing but comments.
func empty(doc []byte) bool {
	var v any
	return yaml.Unmarshal(doc, &v) == nil && v == nil
}

// parseDirective decodes one EnableTypeDirective, refusing unknown fields.
func parseDirective(doc []byte) (request, error) {
	var d directive
	if err := yaml.UnmarshalStrict(doc, &d); err != nil {
		return request{}, fmt.Errorf("not an %s: %w", directiveKind, err)
	}
	switch {
	case d.Kind != directiveKind:
		return request{}, fmt.Errorf("kind %q is not %s", d.Kind, directiveKind)
	case d.APIVersion != directiveAPIVersion:
		return request{}, fmt.Errorf("apiVersion %q is not %s", d.APIVersion, directiveAPIVersion)
	case d.Metadata.Name == "":
		return request{}, fmt.Errorf("%s has no metadata.name: it names the resource to enable, as resource[.group]", directiveKind)
	}
	return request{
		resource:         d.Metadata.Name,
		targetVersion:    d.Spec.TargetVersion,
		federatedGroup:   d.Spec.FederatedGroup,
		federatedVersion: d.Spec.FederatedVersion,
	}, nil
}
