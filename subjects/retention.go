package subjects

// LeaseRetention is the key in BucketLeases of the retention sweep's
// lease: one orchestrator at a time forgets the workflows whose retention
// has passed (package retention).
const LeaseRetention = "retention-sweep"
