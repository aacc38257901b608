// Package docref checks that docs/reference says what the fedwarden binary
// does. Its tests build the binary's real command tree and read the
// metrics its packages register, and fail, saying what to add or remove,
// when docs/reference/cli.md names a command or flag the binary lacks or
// lacks one it has, or docs/reference/metrics.md does the same for
// metrics. They need no API server.
package docref
