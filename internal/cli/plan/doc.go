// Package plan implements `fedwarden plan`: before a change to a federated
// resource is applied, it shows for each member cluster what the control
// plane would do with it — the scheduler's decision, the rollout wave, the
// rendered copy, the member's own verdict on it (a server-side dry run),
// the diff against the live copy and the drift the write would overwrite —
// and writes nothing anywhere. It reads the inputs, runs the controller's
// stages on them (propagation.Placer, DecideRollout, Previewer) and fills
// the report of internal/planreport.
package plan
