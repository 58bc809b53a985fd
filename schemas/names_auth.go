package schemas

// Tokens names the schema of the gateway's token table (--tokens FILE or
// AGENTBUS_TOKENS): a JSON array of {"token", "tenant", "role"} or a JSON
// object from token to {"tenant", "role"}.
const Tokens = "tokens"

// Quotas names the schema of the gateway's quota table (--quotas FILE or
// AGENTBUS_QUOTAS): a JSON object from tenant id to {"running",
// "queued_steps", "upload_bytes"}.
const Quotas = "quotas"

// Retention names the schema of the retention table (--retention FILE or
// AGENTBUS_RETENTION): a JSON object from tenant id to {"completed",
// "failed"}, each a period ("7d", "36h", "forever").
const Retention = "retention"

// ToolPermissions names the schema of the tool permissions table
// (--tool-permissions FILE or AGENTBUS_TOOL_PERMISSIONS): a JSON object
// from tenant id (or "*") to role (or "*") to {"allow", "deny",
// "requires_confirmation"}, each a list of capability glob patterns.
const ToolPermissions = "tool_permissions"
