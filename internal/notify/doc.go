// Package notify delivers drift transitions — a copy found drifted, healed
// under Enforce, left drifted under Alert, back in sync — to webhook sinks
// as CloudEvents 1.0 in structured JSON mode.
//
// Each sink has a bounded queue and one worker that POSTs, retrying with
// exponential backoff; Notify never blocks: when a sink's queue is full the
// event is dropped and counted, so that a slow or dead sink never slows
// propagation.
package notify
