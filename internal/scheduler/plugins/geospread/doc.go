// Package geospread is the GeoSpread scheduler plugin: it spreads a
// workload over regions or zones as its placement's spread constraints ask,
// keeping the workload on the clusters it already runs on where it can.
package geospread
