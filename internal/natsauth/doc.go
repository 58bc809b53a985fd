// Package natsauth owns the NATS side of tenant isolation: the accounts,
// users, exports, imports and permissions that let a tenant's own NATS
// clients and workers touch that tenant's subjects and nothing else
// (DESIGN.md §6).
//
// Data enters as a Config — the tenant ids (the same ones the gateway's
// token table names) and, per tenant, the capabilities its own workers
// serve — and leaves as a Model, the permission model as plain data that
// tests inspect, and as nats-server configuration text (Model.Render) with
// bcrypt-hashed passwords from a Credentials table.
//
// The isolation is built from NATS accounts, not only from per-user
// permissions. Everything agentbus stores lives in account AGENTBUS, where
// agentbus's own roles connect. Each tenant gets an account of its own,
// TENANT_<tenant>, that starts out empty: what it can reach of AGENTBUS is
// exactly what AGENTBUS exports to that account alone and the tenant
// account imports. So a subject of another tenant, a KV bucket, a
// micro-service ($SRV) or a JetStream API call that was not exported does
// not exist for the tenant at all; on top of that each tenant user has
// allow-lists for publish and subscribe, so an attempt is also a
// permissions violation. Crossing accounts has a second effect that
// permissions inside one account cannot give: a request's reply subject is
// rewritten by the server, so the answer of a JetStream API call or of a
// stream publish can only come back to the tenant's own account — a tenant
// cannot make the server publish into another tenant's subjects by naming
// them as its reply subject.
//
// The JetStream API reaches a tenant account under APIPrefix instead of
// $JS.API (a tenant account has no JetStream of its own, and the server
// answers $JS.API there with "JetStream not enabled for account"), so a
// tenant's client opens JetStream with jetstream.NewWithAPIPrefix(nc,
// natsauth.APIPrefix) (nats CLI: --js-api-prefix AGENTBUS.API).
//
// Everything in this package is a pure function or plain data, safe for
// concurrent use, except Credentials, which is a map.
package natsauth
