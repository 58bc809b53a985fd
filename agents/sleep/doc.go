// Package sleep is the built-in sleep agent: it waits for the time its
// input asks for (or until its context ends), reporting progress. It stands
// in for slow work in demos, the crash-safety tests and the scale-out
// benchmark. It is safe for concurrent use.
package sleep
