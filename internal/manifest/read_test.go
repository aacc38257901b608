package manifest

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	objA = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
	objB = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// names lists the names and Sources of objs, as "name@source".
func names(objs []Object) string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Obj.GetName()+"@"+o.Source)
	}
	return strings.Join(out, ",")
}

func TestFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"c.json", "a.yaml", "B.YML", "notes.txt", "d.yaml.bak", "README"} {
		write(t, filepath.Join(dir, name), objA)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "sub.yaml", "e.yaml"), objA)
	got, err := Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Name order is byte order: upper case first. Subdirectories, even
	// one named like a manifest, are not read.
	want := []string{filepath.Join(dir, "B.YML"), filepath.Join(dir, "a.yaml"), filepath.Join(dir, "c.json")}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("Files(dir) = %v, want %v", got, want)
	}

	// A file is itself, whatever its name.
	if got, err := Files(filepath.Join(dir, "notes.txt")); err != nil || len(got) != 1 || got[0] != filepath.Join(dir, "notes.txt") {
		t.Errorf("Files(file) = %v, %v", got, err)
	}
}

func TestFilesErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	empty := t.TempDir()
	write(t, filepath.Join(empty, "notes.txt"), objA)
	missing := filepath.Join(dir, "nope.yaml")
	_, err := Files(missing)
	if want := "-f " + missing + ": no such file or directory"; err == nil || err.Error() != want || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Files(missing): %v, want %q wrapping fs.ErrNotExist", err, want)
	}
	_, err = Files(empty)
	if want := "-f " + empty + ": the directory holds no .yaml, .yml or .json file"; err == nil || err.Error() != want {
		t.Errorf("Files(empty): %v, want %q", err, want)
	}
}

func TestDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		data    string
		want    string
		wantErr string
	}{
		{name: "one object keeps the source's name", data: objA, want: "a@f.yaml"},
		{name: "several are numbered", data: objA + "---\n" + objB, want: "a@f.yaml (object 1),b@f.yaml (object 2)"},
		{name: "empty documents do not count", data: "# comment\n---\n" + objA + "---\n---\n", want: "a@f.yaml"},
		{name: "JSON", data: `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}`, want: "a@f.yaml"},
		{name: "JSON objects in a row", data: `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}} {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}`,
			want: "a@f.yaml (object 1),b@f.yaml (object 2)"},
		{name: "empty", data: "", want: ""},
		{name: "no name", data: objA + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", wantErr: "f.yaml (object 2): the object has no metadata.name"},
		{name: "no kind", data: "apiVersion: v1\nmetadata: {name: a}\n", wantErr: "f.yaml: the object has no apiVersion or kind"},
		{name: "no apiVersion", data: "kind: ConfigMap\nmetadata: {name: a}\n", wantErr: "f.yaml: the object has no apiVersion or kind"},
		{name: "not YAML", data: `{"apiVersion": `, wantErr: "f.yaml: not a YAML or JSON object: "},
		{name: "a list, not an object", data: "- a\n- b\n", wantErr: "f.yaml: not a YAML or JSON object: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Decode("f.yaml", []byte(tt.data))
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Errorf("Decode: %v, want an error starting %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if names(got) != tt.want {
				t.Errorf("Decode = %s, want %s", names(got), tt.want)
			}
		})
	}
}

func TestRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "2.yaml"), objB)
	write(t, filepath.Join(dir, "1.yaml"), objA+"---\n"+objB)
	write(t, filepath.Join(dir, "3.txt"), "not read")
	empty := filepath.Join(t.TempDir(), "empty.yaml")
	write(t, empty, "# nothing yet\n")
	noName := filepath.Join(t.TempDir(), "noname.yaml")
	write(t, noName, "apiVersion: v1\nkind: ConfigMap\n")
	tests := []struct {
		name    string
		path    string
		stdin   string
		want    string
		wantErr string
	}{
		{name: "a directory, in name order", path: dir,
			want: "a@" + filepath.Join(dir, "1.yaml") + " (object 1),b@" + filepath.Join(dir, "1.yaml") + " (object 2),b@" + filepath.Join(dir, "2.yaml")},
		{name: "a file", path: filepath.Join(dir, "2.yaml"), want: "b@" + filepath.Join(dir, "2.yaml")},
		{name: "standard input", path: "-", stdin: objA + "---\n" + objB, want: "a@- (object 1),b@- (object 2)"},
		{name: "empty standard input", path: "-", wantErr: "-f -: holds no object"},
		{name: "empty file", path: empty, wantErr: "-f " + empty + ": holds no object"},
		{name: "no name", path: noName, wantErr: "-f " + noName + ": the object has no metadata.name"},
		{name: "not YAML on standard input", path: "-", stdin: "{", wantErr: "-f -: not a YAML or JSON object: "},
		{name: "missing", path: filepath.Join(dir, "nope"), wantErr: "-f " + filepath.Join(dir, "nope") + ": no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Read(tt.path, strings.NewReader(tt.stdin))
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Errorf("Read: %v, want an error starting %q", err, tt.wantErr)
				}
				if strings.HasSuffix(tt.wantErr, "holds no object") && !errors.Is(err, ErrNoObject) {
					t.Errorf("Read: %v does not wrap ErrNoObject", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if names(got) != tt.want {
				t.Errorf("Read = %s, want %s", names(got), tt.want)
			}
		})
	}
}
