// Package echo is the built-in echo agent: it returns its step's input and
// the outputs of the steps it depends on, which makes the data flow of any
// plan visible. It is safe for concurrent use.
package echo
