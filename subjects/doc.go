// Package subjects owns every name agentbus puts on the wire: NATS subjects,
// JetStream stream, consumer and KV bucket names, and KV keys.
//
// Data enters as tenant ids, workflow ids and capabilities (untrusted strings
// from HTTP bodies, CloudEvent headers or CLI flags) and leaves as subjects and
// names that are guaranteed to sit under "agentbus.<tenant>." and to hold no
// NATS wildcard or separator inside a token. No other package spells a subject
// by hand: they call the validating builders here, which return ErrInvalidToken
// (wrapped in a *TokenError naming the offending field) for anything unsafe.
//
// Everything in this package is a pure function or a constant and is safe for
// concurrent use.
package subjects
