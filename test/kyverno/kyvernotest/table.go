package kyvernotest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Table returns what `kubectl get <resource> -n <namespace>` prints: the
// API server's table of the resource (its printer columns), with dates as
// ages, as kubectl shows them.
func Table(ctx context.Context, cfg *rest.Config, gvr schema.GroupVersionResource, namespace string) (string, error) {
	c := rest.CopyConfig(cfg)
	c.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	client, err := rest.UnversionedRESTClientFor(withDefaults(c))
	if err != nil {
		return "", err
	}
	prefix := "/apis/" + gvr.Group + "/" + gvr.Version
	if gvr.Group == "" {
		prefix = "/api/" + gvr.Version
	}
	raw, err := client.Get().AbsPath(prefix, "namespaces", namespace, gvr.Resource).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
		DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("listing %s in %s as a table: %w", gvr.Resource, namespace, err)
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(raw, table); err != nil {
		return "", fmt.Errorf("reading the table of %s: %w", gvr.Resource, err)
	}
	return formatTable(table, time.Now()), nil
}

func withDefaults(c *rest.Config) *rest.Config {
	c.GroupVersion = &schema.GroupVersion{Group: "meta.k8s.io", Version: "v1"}
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return c
}

// formatTable lays out the columns of priority 0 as kubectl does.
func formatTable(t *metav1.Table, now time.Time) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 8, 3, ' ', 0)
	var cols []int
	var header []string
	for i, c := range t.ColumnDefinitions {
		if c.Priority == 0 {
			cols = append(cols, i)
			header = append(header, strings.ToUpper(c.Name))
		}
	}
	fmt.Fprintln(w, strings.Join(header, "\t"))
	for _, row := range t.Rows {
		var cells []string
		for _, i := range cols {
			cells = append(cells, cell(t.ColumnDefinitions[i], row.Cells[i], now))
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	_ = w.Flush()
	if len(t.Rows) == 0 {
		return "No resources found.\n"
	}
	return b.String()
}

func cell(def metav1.TableColumnDefinition, v any, now time.Time) string {
	if v == nil {
		return "<none>"
	}
	if s, ok := v.(string); ok && def.Format == "date" {
		if at, err := time.Parse(time.RFC3339, s); err == nil {
			return duration.HumanDuration(now.Sub(at))
		}
	}
	if f, ok := v.(float64); ok && f == float64(int64(f)) {
		return fmt.Sprint(int64(f))
	}
	return fmt.Sprint(v)
}
