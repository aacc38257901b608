package fedtest

import (
	"fmt"
	"sync"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/leakscan"
)

// leaks tells a leak scanner, when ScanForLeaks set one, of what the
// processes started here log and the clusters they work on.
var leaks struct {
	sync.Mutex
	scanner *leakscan.Scanner
	// watched are the federations watched, by host endpoint, with how many
	// running controller-managers work on each.
	watched map[string]*watchedFederation
}

type watchedFederation struct {
	users int
	stop  []func()
}

// ScanForLeaks makes what this package starts from now on report to s:
// the log of every controller-manager and agent, kept when it stops; the
// clusters of each federation a controller-manager works on, watched while
// one does; and the tokens WriteAgentMemberKubeconfig mints.
func ScanForLeaks(s *leakscan.Scanner) {
	leaks.Lock()
	defer leaks.Unlock()
	leaks.scanner = s
	leaks.watched = map[string]*watchedFederation{}
}

// scanner returns the leak scanner, nil when there is none.
func scanner() *leakscan.Scanner {
	leaks.Lock()
	defer leaks.Unlock()
	return leaks.scanner
}

// logName names a process's log in a leak report.
func logName(cm *ControllerManager) string { return cm.LogPath }

// watchFederation watches the clusters of f for the leak scanner, if there
// is one and they are not watched yet, and returns the function that
// releases them: once every controller-manager that works on f has
// released them, they are no longer watched.
func watchFederation(f *localfed.Federation) (release func(), err error) {
	leaks.Lock()
	defer leaks.Unlock()
	if leaks.scanner == nil {
		return func() {}, nil
	}
	key := f.Host.Endpoint
	w := leaks.watched[key]
	if w == nil {
		w = &watchedFederation{}
		for _, c := range f.Clusters() {
			stop, err := leaks.scanner.Watch(fmt.Sprintf("%s (%s)", c.Name, c.Endpoint), c.Config)
			if err != nil {
				for _, s := range w.stop {
					s()
				}
				return nil, err
			}
			w.stop = append(w.stop, stop)
		}
		leaks.watched[key] = w
	}
	w.users++
	var once sync.Once
	return func() {
		once.Do(func() {
			leaks.Lock()
			defer leaks.Unlock()
			if w.users--; w.users > 0 {
				return
			}
			for _, s := range w.stop {
				s()
			}
			delete(leaks.watched, key)
		})
	}, nil
}

// WatchCluster watches one more cluster c for the leak scanner, if there is
// one: a member a test started on its own (localfed AddMember), whose
// Secrets the scan must know too. stop ends the watch; what it saw stays
// known to the scanner.
func WatchCluster(c *localfed.Cluster) (stop func(), err error) {
	s := scanner()
	if s == nil {
		return func() {}, nil
	}
	return s.Watch(fmt.Sprintf("%s (%s)", c.Name, c.Endpoint), c.Config)
}

// StopWatching stops watching every federation, for the scan at the end
// of a run.
func StopWatching() {
	leaks.Lock()
	defer leaks.Unlock()
	for key, w := range leaks.watched {
		for _, s := range w.stop {
			s()
		}
		delete(leaks.watched, key)
	}
}

// addMintedToken tells the leak scanner of the token in the kubeconfig at
// path, which a test minted for who.
func addMintedToken(path, who string) error {
	s := scanner()
	if s == nil {
		return nil
	}
	kc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return fmt.Errorf("reading the minted token for the leak scan: %w", err)
	}
	for _, auth := range kc.AuthInfos {
		if auth.Token != "" {
			s.AddSecret("the token minted (TokenRequest) for "+who, []byte(auth.Token))
		}
	}
	return nil
}
