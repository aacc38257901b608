// Package planreport is the report of `fedwarden plan`: what the control
// plane would do with a federated resource in each cluster, as the JSON of
// -o json (docs/plan.md documents its keys) and as text. The plan command
// fills it; tools that read plan's JSON, as test/plandiff does, decode it.
package planreport
