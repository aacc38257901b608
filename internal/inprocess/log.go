package inprocess

import (
	"bufio"
	"os"
	"strings"

	"github.com/fedwarden/fedwarden/internal/egress"
)

// refusals returns the lines of the log at path that say a connection to a
// member outside the allowed networks was refused.
func refusals(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		if strings.Contains(sc.Text(), egress.RefusedMessage) {
			out = append(out, sc.Text())
		}
	}
	return out, sc.Err()
}
