package subjects

// BucketSessions holds every conversation session, one key per session
// (SessionKey): its turns and rolling summary, kept for the session TTL
// after its newest turn.
const BucketSessions = "AGENTBUS_SESSIONS"

// NoUser is the user token of sessions and memory keys that belong to a
// tenant as a whole (a token that names no user). It can never be a user
// id: user ids start with a letter or digit.
const NoUser = "_"

// ValidSession reports whether id is a valid session id (the token grammar
// of tenant and workflow ids; an A2A contextId that is a UUID fits it).
func ValidSession(id string) error { return check("session", id) }

// ValidUser reports whether id is a valid user id (the token grammar).
func ValidUser(id string) error { return check("user", id) }

// SessionKey returns the BucketSessions key "<tenant>.<user>.<session>",
// user being NoUser when empty: a user's sessions and the tenant-wide ones
// are apart, so that one user never reads another's.
func SessionKey(tenant, user, session string) (string, error) {
	if err := ValidTenant(tenant); err != nil {
		return "", err
	}
	scope, err := userScope(user)
	if err != nil {
		return "", err
	}
	if err := ValidSession(session); err != nil {
		return "", err
	}
	return tenant + "." + scope + "." + session, nil
}

// MemoryPrefix returns the BucketMemory key prefix of a user's facts,
// "<tenant>.<user>." — or "<tenant>." for tenant-wide facts when user is
// empty. Every memory key is the prefix plus one token (a fact's hash).
func MemoryPrefix(tenant, user string) (string, error) {
	if err := ValidTenant(tenant); err != nil {
		return "", err
	}
	if user == "" {
		return tenant + ".", nil
	}
	if err := ValidUser(user); err != nil {
		return "", err
	}
	return tenant + "." + user + ".", nil
}

func userScope(user string) (string, error) {
	if user == "" {
		return NoUser, nil
	}
	if err := ValidUser(user); err != nil {
		return "", err
	}
	return user, nil
}
