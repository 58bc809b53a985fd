// Command s2repro reproduces, with nats-server alone, the fault that keeps
// agentbus's --compress-streams off by default: on nats-server 2.15.2 a
// three-server cluster whose streams are S2-compressed, killed -9 and
// stopped under load, leaves a stream a server cannot recover
// ("smb.truncate: error reading compression reader: s2: corrupt input",
// then "Error recreating stream … s2: corrupt input" at each restart).
// No agentbus code runs: the servers are this program started again as
// nats-server (the module's own), the load is nats.go publishes to an R3
// stream and KV bucket. It prints what each round did and exits 1 when the
// servers' logs show the fault, 0 when they do not.
//
//	go run ./internal/s2repro -dir /tmp/s2repro            # S2, as --compress-streams
//	go run ./internal/s2repro -dir /tmp/s2repro -plain     # the same, uncompressed
package main
