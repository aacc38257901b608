package chaos

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// WriteLog counts the writes to the copies in members by watching them
// from the test, so that its counts survive the controller-manager's
// crashes (its fedwarden_member_writes_total starts again at zero). Every
// create or update of a copy is one write; a write that changes nothing is
// not seen, and neither does it cost the member anything. Its watches
// resume from the last resourceVersion seen when a member's API server is
// down for a while; a kube-apiserver that restarted answers that this
// version is too old, and the watch of that member ends (Ended): its counts
// then stop there.
type WriteLog struct {
	mu     sync.Mutex
	writes map[string]map[string][]Write // cluster → name → writes
	ended  map[string]string             // cluster → why its watch ended
	stop   func()
}

// Write is one create or update of a copy, as a member's watch saw it.
type Write struct {
	At              time.Time
	Created         bool
	TemplateVersion int
	OverrideVersion int
	// Hash is the copy's desired-hash annotation: what Fedwarden applied.
	Hash string
	// Object is the copy as written.
	Object *unstructured.Unstructured
}

// WatchWrites starts watching the copies of resource gvr in namespace in
// each member (by name), from now on, until Stop.
func WatchWrites(ctx context.Context, members map[string]*rest.Config, gvr schema.GroupVersionResource, namespace string) (*WriteLog, error) {
	ctx, cancel := context.WithCancel(ctx)
	l := &WriteLog{writes: map[string]map[string][]Write{}, ended: map[string]string{}, stop: cancel}
	for cluster, cfg := range members {
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			cancel()
			return nil, err
		}
		api := dyn.Resource(gvr).Namespace(namespace)
		list, err := api.List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			cancel()
			return nil, fmt.Errorf("listing %s in %s: %w", gvr.Resource, cluster, err)
		}
		w, err := watchtools.NewRetryWatcherWithContext(ctx, list.GetResourceVersion(), &cache.ListWatch{
			WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				return api.Watch(ctx, opts)
			},
		})
		if err != nil {
			cancel()
			return nil, err
		}
		l.writes[cluster] = map[string][]Write{}
		go func() {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-w.ResultChan():
					if !ok {
						l.end(cluster, "the watch closed")
						return
					}
					if ev.Type == watch.Error {
						l.end(cluster, fmt.Sprintf("%v", ev.Object))
						continue
					}
					l.record(cluster, ev)
				}
			}
		}()
	}
	return l, nil
}

func (l *WriteLog) record(cluster string, ev watch.Event) {
	if ev.Type != watch.Added && ev.Type != watch.Modified {
		return
	}
	obj, ok := ev.Object.(*unstructured.Unstructured)
	if !ok || obj.GetLabels()[typesv1beta1.LabelManaged] != "true" {
		return
	}
	tv, _ := strconv.Atoi(obj.GetAnnotations()[typesv1beta1.AnnotationTemplateVersion])
	ov, _ := strconv.Atoi(obj.GetAnnotations()[typesv1beta1.AnnotationOverrideVersion])
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes[cluster][obj.GetName()] = append(l.writes[cluster][obj.GetName()], Write{At: time.Now(), Created: ev.Type == watch.Added, TemplateVersion: tv, OverrideVersion: ov, Hash: obj.GetAnnotations()[typesv1beta1.AnnotationDesiredHash], Object: obj})
}

func (l *WriteLog) end(cluster, why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.ended[cluster]; !ok {
		l.ended[cluster] = why
	}
}

// Ended returns the clusters whose watch ended before Stop, and why: their
// counts are only those seen until then.
func (l *WriteLog) Ended() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.ended)
}

// Stop ends the watches.
func (l *WriteLog) Stop() { l.stop() }

// Of returns the writes seen to cluster's copy of name.
func (l *WriteLog) Of(cluster, name string) []Write {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Write(nil), l.writes[cluster][name]...)
}

// Count returns how many writes each cluster's copies got, and how many
// copies were created, in all.
func (l *WriteLog) Count() (writes, created map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	writes, created = map[string]int{}, map[string]int{}
	for cluster, byName := range l.writes {
		for _, ws := range byName {
			writes[cluster] += len(ws)
			for _, w := range ws {
				if w.Created {
					created[cluster]++
				}
			}
		}
	}
	return writes, created
}

// Beyond lists the copies written more often than allowed(cluster, name)
// says, with their counts, and returns how many writes were extra in all.
func (l *WriteLog) Beyond(allowed func(cluster, name string) int) (extra int, offenders []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for cluster, byName := range l.writes {
		for name, ws := range byName {
			if n, max := len(ws), allowed(cluster, name); n > max {
				extra += n - max
				offenders = append(offenders, fmt.Sprintf("%s %s: %d writes, want at most %d", cluster, name, n, max))
			}
		}
	}
	return extra, offenders
}

// Duplicates lists the writes that applied the same content as the write
// just before them to the same copy: a write that changed nothing Fedwarden
// wants. A hand edit and its healing look the same, so a test that edits
// copies by hand does not ask.
func (l *WriteLog) Duplicates() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var dups []string
	for cluster, byName := range l.writes {
		for name, ws := range byName {
			for i := 1; i < len(ws); i++ {
				if ws[i].Hash != "" && ws[i].Hash == ws[i-1].Hash {
					dups = append(dups, fmt.Sprintf("%s %s: resourceVersion %s applied the same content as %s", cluster, name, ws[i].Object.GetResourceVersion(), ws[i-1].Object.GetResourceVersion()))
				}
			}
		}
	}
	return dups
}
