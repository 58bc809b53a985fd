// Command layers checks the direction of imports between agentbus's
// packages (DESIGN.md §4): every package of the module sits in one layer
// of the table in layers.go, and
//
//   - no package imports a package of a higher layer, and
//   - the groups of the table (a package, or a tree such as agents/...)
//     import each other in no cycle, not even within one layer.
//
// Only non-test imports count: a _test.go file may import what it needs.
// A package the table places nowhere is an error, so a new package gets a
// layer when it lands. The imports in allowed are known violations being
// removed; an entry that no longer occurs is an error too, so that the
// list only shrinks.
//
// The package graph enters from `go list -json ./...` run in the current
// directory; the verdict leaves on standard output, one line per
// violation, or a one-line summary with counts when there is none. The
// exit status is 1 on a violation, 2 when go list fails. `make lint` runs
// it from the repository root:
//
//	go run ./internal/layers          # the check
//	go run ./internal/layers -v       # also the allowlisted violations
//	go run ./internal/layers -deps    # also how much ./client and ./agents link, and whether nats-server is among it
package main
