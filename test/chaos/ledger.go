package chaos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/propagation"
)

// Ledger reads the federated resources of one type in one namespace, their
// ClusterPropagatedVersions (CPVs) and the member copies, and counts what
// does not add up.
type Ledger struct {
	Host client.Client
	// Members are the joined members' clients, by cluster name.
	Members   map[string]client.Client
	Type      propagation.Type
	Namespace string
}

// Report is what a Ledger found. Each offender is described in one line
// that names the cluster, the resource and what is wrong.
type Report struct {
	// Federated, Deleting, CPVs and Copies count what exists: the federated
	// resources (Deleting of them being deleted), the CPVs and the managed
	// copies in all members.
	Federated, Deleting, CPVs, Copies int
	// Lost are placed copies that are missing.
	Lost []string
	// Orphaned are copies with no federated resource, or in a cluster the
	// resource is not placed on.
	Orphaned []string
	// WrongVersion are copies whose content differs from the resource's
	// template and overrides, whose version annotations differ from the
	// CPV's, or whose CPV entry does not record them InSync at the CPV's
	// versions.
	WrongVersion []string
	// Stale are copies whose CPV entry records them right but at another
	// resourceVersion than theirs: the CPV missed their last write.
	Stale []string
}

// Clean tells whether nothing is lost, orphaned, at the wrong version or
// still being deleted.
func (r Report) Clean() bool {
	return r.Converged() && len(r.Stale) == 0
}

// Converged is Clean, except that CPV entries may record stale
// resourceVersions (Stale).
func (r Report) Converged() bool {
	return len(r.Lost)+len(r.Orphaned)+len(r.WrongVersion) == 0 && r.Deleting == 0
}

// String sums the report up in one line.
func (r Report) String() string {
	return fmt.Sprintf("%d federated (%d being deleted), %d CPVs, %d copies: %d lost, %d orphaned, %d at the wrong version, %d with a stale CPV entry",
		r.Federated, r.Deleting, r.CPVs, r.Copies, len(r.Lost), len(r.Orphaned), len(r.WrongVersion), len(r.Stale))
}

// Err returns nil for a clean report, or an error that sums it up and
// lists the offenders, up to limit of each kind.
func (r Report) Err() error {
	if r.Clean() {
		return nil
	}
	const limit = 20
	var b strings.Builder
	b.WriteString(r.String())
	for _, list := range []struct {
		what string
		all  []string
	}{{"lost", r.Lost}, {"orphaned", r.Orphaned}, {"at the wrong version", r.WrongVersion}, {"with a stale CPV entry", r.Stale}} {
		if len(list.all) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s:", list.what)
		for _, o := range list.all[:min(len(list.all), limit)] {
			b.WriteString("\n  " + o)
		}
		if len(list.all) > limit {
			fmt.Fprintf(&b, "\n  … and %d more", len(list.all)-limit)
		}
	}
	return errors.New(b.String())
}

// Check reads the host and every member once and returns what it found.
func (l *Ledger) Check(ctx context.Context) (Report, error) {
	var r Report
	feds := &unstructured.UnstructuredList{}
	feds.SetGroupVersionKind(l.Type.Federated.GroupVersion().WithKind(l.Type.Federated.Kind + "List"))
	if err := l.Host.List(ctx, feds, client.InNamespace(l.Namespace)); err != nil {
		return r, fmt.Errorf("listing %s: %w", l.Type.FederatedResource, err)
	}
	var cpvs typesv1beta1.ClusterPropagatedVersionList
	if err := l.Host.List(ctx, &cpvs, client.InNamespace(l.Namespace)); err != nil {
		return r, fmt.Errorf("listing ClusterPropagatedVersions: %w", err)
	}
	cpvByName := map[string]*typesv1beta1.ClusterPropagatedVersion{}
	for i := range cpvs.Items {
		cpvByName[cpvs.Items[i].Name] = &cpvs.Items[i]
	}
	copies := map[string]map[string]*unstructured.Unstructured{} // cluster → name → copy
	for _, cluster := range slices.Sorted(maps.Keys(l.Members)) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(l.Type.Target.GroupVersion().WithKind(l.Type.Target.Kind + "List"))
		if err := l.Members[cluster].List(ctx, list, client.InNamespace(l.Namespace), client.MatchingLabels{typesv1beta1.LabelManaged: "true"}); err != nil {
			return r, fmt.Errorf("listing %s in %s: %w", l.Type.TargetResource.Resource, cluster, err)
		}
		copies[cluster] = map[string]*unstructured.Unstructured{}
		for i := range list.Items {
			copies[cluster][list.Items[i].GetName()] = &list.Items[i]
		}
		r.Copies += len(list.Items)
	}
	r.Federated, r.CPVs = len(feds.Items), len(cpvs.Items)
	placedOn := map[string]map[string]bool{} // name → clusters
	for i := range feds.Items {
		fed := &feds.Items[i]
		name := fed.GetName()
		if !fed.GetDeletionTimestamp().IsZero() {
			r.Deleting++
		}
		placed, err := placement(fed, cpvByName[l.Type.CPVName(name)])
		if err != nil {
			return r, err
		}
		placedOn[name] = map[string]bool{}
		for _, cluster := range placed {
			if _, joined := l.Members[cluster]; !joined {
				continue
			}
			placedOn[name][cluster] = true
			cp, ok := copies[cluster][name]
			switch {
			case !ok && fed.GetDeletionTimestamp().IsZero():
				r.Lost = append(r.Lost, fmt.Sprintf("%s %s: no copy", cluster, name))
			case ok && fed.GetDeletionTimestamp().IsZero():
				why, stale := l.wrong(fed, cpvByName[l.Type.CPVName(name)], cluster, cp)
				switch {
				case why != "":
					r.WrongVersion = append(r.WrongVersion, fmt.Sprintf("%s %s: %s", cluster, name, why))
				case stale != "":
					r.Stale = append(r.Stale, fmt.Sprintf("%s %s: %s", cluster, name, stale))
				}
			}
		}
	}
	for _, cluster := range slices.Sorted(maps.Keys(copies)) {
		for _, name := range slices.Sorted(maps.Keys(copies[cluster])) {
			clusters, exists := placedOn[name]
			switch {
			case !exists:
				r.Orphaned = append(r.Orphaned, fmt.Sprintf("%s %s: no %s", cluster, name, l.Type.Federated.Kind))
			case !clusters[cluster]:
				r.Orphaned = append(r.Orphaned, fmt.Sprintf("%s %s: not placed on %s", cluster, name, cluster))
			}
		}
	}
	return r, nil
}

// placement returns the clusters fed names in spec.placement.clusters, or,
// when it places by selector, the clusters its CPV was scheduled to.
func placement(fed *unstructured.Unstructured, cpv *typesv1beta1.ClusterPropagatedVersion) ([]string, error) {
	list, found, err := unstructured.NestedSlice(fed.Object, "spec", "placement", "clusters")
	if err != nil {
		return nil, fmt.Errorf("reading the placement of %s: %w", fed.GetName(), err)
	}
	var names []string
	if !found {
		if cpv != nil {
			for _, pc := range cpv.Spec.Clusters {
				names = append(names, string(pc.Name))
			}
		}
		return names, nil
	}
	for _, c := range list {
		if m, ok := c.(map[string]any); ok {
			if n, ok := m["name"].(string); ok {
				names = append(names, n)
			}
		}
	}
	return names, nil
}

// wrong says what is wrong with cluster's copy cp of fed, or "", and
// whether its CPV entry records another resourceVersion (stale).
func (l *Ledger) wrong(fed *unstructured.Unstructured, cpv *typesv1beta1.ClusterPropagatedVersion, cluster string, cp *unstructured.Unstructured) (why, stale string) {
	desired, err := propagation.Desired(l.Type, fed, cluster, nil)
	if err != nil {
		return fmt.Sprintf("rendering the desired copy: %v", err), ""
	}
	for k, want := range desired.Object {
		if k == "metadata" || k == "status" {
			continue
		}
		if got := cp.Object[k]; !equality.Semantic.DeepEqual(got, want) {
			return fmt.Sprintf("%s is %v, want %v", k, got, want), ""
		}
	}
	for k, v := range desired.GetLabels() {
		if cp.GetLabels()[k] != v {
			return fmt.Sprintf("label %s is %q, want %q", k, cp.GetLabels()[k], v), ""
		}
	}
	if cpv == nil {
		return "no ClusterPropagatedVersion", ""
	}
	tv, ov := cp.GetAnnotations()[typesv1beta1.AnnotationTemplateVersion], cp.GetAnnotations()[typesv1beta1.AnnotationOverrideVersion]
	if tv != string(cpv.Status.TemplateVersion) || ov != string(cpv.Status.OverrideVersion) {
		return fmt.Sprintf("carries template/override versions %q/%q, the CPV says %q/%q", tv, ov, cpv.Status.TemplateVersion, cpv.Status.OverrideVersion), ""
	}
	for _, cv := range cpv.Status.ClusterVersions {
		if string(cv.ClusterName) != cluster {
			continue
		}
		if cv.State != typesv1beta1.InSync || string(cv.TemplateVersion) != tv || string(cv.OverrideVersion) != ov {
			return fmt.Sprintf("the CPV records %s at %q/%q, the copy carries %q/%q", cv.State, cv.TemplateVersion, cv.OverrideVersion, tv, ov), ""
		}
		if cv.Version != cp.GetResourceVersion() {
			return "", fmt.Sprintf("the CPV records resourceVersion %s, the copy's is %s", cv.Version, cp.GetResourceVersion())
		}
		return "", ""
	}
	return "the CPV has no entry for " + cluster, ""
}
