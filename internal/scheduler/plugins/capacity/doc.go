// Package capacity rules out the clusters where the workload's new pods do
// not fit, by the free room of their Ready nodes and the namespace's
// ResourceQuotas, and ranks the rest by how many more pods they could take.
// A cluster whose capacity is not measured (yet) is never ruled out.
package capacity
