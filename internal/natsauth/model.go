package natsauth

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentbus/agentbus/subjects"
)

// APIPrefix is where a tenant account sees the part of AGENTBUS's
// JetStream API exported to it: "AGENTBUS.API.CONSUMER.CREATE.…" in the
// tenant account is "$JS.API.CONSUMER.CREATE.…" in AGENTBUS.
const APIPrefix = "AGENTBUS.API"

// jsAPI is the JetStream API prefix in an account that has JetStream.
const jsAPI = "$JS.API"

// Account names. Tenant accounts are TenantAccount(tenant); tenant ids are
// lower case, so no tenant account can be named like these.
const (
	// AccountAgentbus holds every stream and bucket and agentbus's roles.
	AccountAgentbus = "AGENTBUS"
	// AccountSystem is the server's system account (nats server report …).
	AccountSystem = "SYS"
)

// System users: agentbus's own roles, one user per role, with the whole
// AGENTBUS account. They hold no '.', and every tenant user does, so the
// two never collide whatever the tenant ids.
const (
	UserOrchestrator = "agentbus-orchestrator"
	UserWorker       = "agentbus-worker"
	UserGateway      = "agentbus-gateway"
	// UserSystem is the operator's user in AccountSystem.
	UserSystem = "sys"
)

// TenantAccount is the account of a tenant's own users: "TENANT_<tenant>".
func TenantAccount(tenant string) string { return "TENANT_" + tenant }

// ClientUser is the user of a tenant's programs that submit, control and
// follow workflows: "<tenant>.client".
func ClientUser(tenant string) string { return tenant + ".client" }

// WorkerUser is the user of a tenant's own agents (written in any
// language) that serve its steps: "<tenant>.worker".
func WorkerUser(tenant string) string { return tenant + ".worker" }

// StepConsumer is the durable pull consumer on AGENTBUS_STEPS through which
// a tenant's own worker serves capability for that tenant only:
// "<tenant>-STEP-<capability>", filter "agentbus.<tenant>.step.<capability>".
// Tenant ids and capabilities are lower case, so the upper-case separator
// makes the name unambiguous: no other (tenant, capability) pair, and no
// built-in "step-<capability>" consumer, has it.
func StepConsumer(tenant, capability string) (string, error) {
	if err := subjects.ValidTenant(tenant); err != nil {
		return "", err
	}
	if err := subjects.ValidCapability(capability); err != nil {
		return "", err
	}
	return tenant + "-STEP-" + capability, nil
}

// Tenant is one tenant and the capabilities its own workers serve.
type Tenant struct {
	// ID is the tenant id, a single subject token (subjects.ValidTenant).
	ID string
	// Capabilities are served by the tenant's worker user, each through
	// StepConsumer(ID, capability). Empty: the worker user may publish
	// replies and events but pull no step.
	Capabilities []string
}

// Config says which tenants get accounts. The zero value has none: only
// AGENTBUS and SYS with the system users.
type Config struct {
	Tenants []Tenant
}

// Validate reports every bad tenant id, bad capability and duplicate at once.
func (c Config) Validate() error {
	var errs []error
	seen := map[string]bool{}
	for i, t := range c.Tenants {
		if err := subjects.ValidTenant(t.ID); err != nil {
			errs = append(errs, fmt.Errorf("natsauth: tenant #%d: %w", i, err))
			continue
		}
		if seen[t.ID] {
			errs = append(errs, fmt.Errorf("natsauth: tenant %s given twice", t.ID))
		}
		seen[t.ID] = true
		caps := map[string]bool{}
		for _, c := range t.Capabilities {
			if err := subjects.ValidCapability(c); err != nil {
				errs = append(errs, fmt.Errorf("natsauth: tenant %s: %w", t.ID, err))
				continue
			}
			if caps[c] {
				errs = append(errs, fmt.Errorf("natsauth: tenant %s: capability %s given twice", t.ID, c))
			}
			caps[c] = true
		}
	}
	return errors.Join(errs...)
}

// Model is the permission model as data: what NewModel derives from a
// Config and Render prints. Accounts come in a stable order: AGENTBUS,
// the tenants sorted by id, SYS.
type Model struct {
	Accounts []Account
	// SystemAccount names the server's system account.
	SystemAccount string
}

// Account is one NATS account with its users, exports and imports.
type Account struct {
	Name      string
	JetStream bool
	// Tenant is the tenant a TENANT_ account belongs to; empty otherwise.
	Tenant  string
	Users   []User
	Exports []Export
	Imports []Import
}

// User is one user of an account. Nil Publish and Subscribe mean no
// restriction inside the account; otherwise they are allow-lists and
// everything else is denied.
type User struct {
	Name      string
	Publish   []string
	Subscribe []string
	// Role says what the user is for, for the rendered comment.
	Role string
}

// Export is a subject AGENTBUS offers to the accounts named.
type Export struct {
	Subject string
	// Service exports take requests (publishes) into AGENTBUS; the others
	// are streams that deliver AGENTBUS's messages to importers.
	Service bool
	// Streamed marks a service that answers one request with many
	// messages (a pull request for a batch).
	Streamed bool
	Accounts []string
}

// Import brings an export of Account into the importing account, where it
// is seen as To (Subject when To is empty).
type Import struct {
	Account string
	Subject string
	To      string
	Service bool
}

// Local is the subject as the importing account sees it.
func (i Import) Local() string {
	if i.To != "" {
		return i.To
	}
	return i.Subject
}

// NewModel derives the accounts, users and permissions for cfg.
func NewModel(cfg Config) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tenants := slices.Clone(cfg.Tenants)
	slices.SortFunc(tenants, func(a, b Tenant) int { return strings.Compare(a.ID, b.ID) })

	ab := Account{Name: AccountAgentbus, JetStream: true, Users: []User{
		{Name: UserOrchestrator, Role: "agentbus orchestrator: the whole AGENTBUS account"},
		{Name: UserWorker, Role: "agentbus built-in workers: the whole AGENTBUS account"},
		{Name: UserGateway, Role: "agentbus gateway: the whole AGENTBUS account"},
	}}
	var accounts []Account
	var all []string
	for _, t := range tenants {
		exports, acc, err := tenantAccount(t)
		if err != nil {
			return nil, err
		}
		ab.Exports = append(ab.Exports, exports...)
		accounts = append(accounts, acc)
		all = append(all, acc.Name)
	}
	if len(all) > 0 {
		// A follower pulls, inspects and deletes its ordered consumers by
		// name; these are shared by every tenant (see eventsByName).
		for _, s := range eventsByName() {
			ab.Exports = append(ab.Exports, Export{Subject: s, Service: true, Streamed: strings.Contains(s, ".MSG.NEXT."), Accounts: all})
		}
		for i := range accounts {
			for _, s := range eventsByName() {
				accounts[i].Imports = append(accounts[i].Imports, importAPI(s))
			}
		}
	}
	m := &Model{SystemAccount: AccountSystem}
	m.Accounts = append(m.Accounts, ab)
	m.Accounts = append(m.Accounts, accounts...)
	m.Accounts = append(m.Accounts, Account{Name: AccountSystem, Users: []User{{Name: UserSystem, Role: "operator: the server's system account"}}})
	return m, nil
}

// eventsByName are the JetStream API subjects, on AGENTBUS, by which a
// follower drives a consumer of AGENTBUS_EVENTS it has created: pull,
// info, delete. They are keyed by consumer name, which no permission can
// tie to a tenant; consumer names are random (nats.go's ordered consumers
// and agentbus's followers take a NUID) and no tenant can list them.
func eventsByName() []string {
	return []string{
		jsAPI + ".CONSUMER.MSG.NEXT." + subjects.StreamEvents + ".*",
		jsAPI + ".CONSUMER.INFO." + subjects.StreamEvents + ".*",
		jsAPI + ".CONSUMER.DELETE." + subjects.StreamEvents + ".*",
	}
}

// importAPI imports a JetStream API subject of AGENTBUS under APIPrefix,
// and any other subject as it is.
func importAPI(subject string) Import {
	im := Import{Account: AccountAgentbus, Subject: subject, Service: true}
	if rest, ok := strings.CutPrefix(subject, jsAPI+"."); ok {
		im.To = APIPrefix + "." + rest
	}
	return im
}

// tenantAccount returns what AGENTBUS exports to tenant t alone and t's
// account with its imports and users.
func tenantAccount(t Tenant) ([]Export, Account, error) {
	name := TenantAccount(t.ID)
	root := subjects.Root + "." + t.ID
	submit, err := subjects.Submit(t.ID)
	if err != nil {
		return nil, Account{}, err
	}
	var (
		control    = root + ".control.*"
		events     = root + ".events.*"
		live       = root + ".live.*"
		eventsTree = root + ".events.>"
		replies    = root + ".reply.*"
		results    = root + ".result.*"
		dead       = root + ".deadletter.*"
	)
	acc := Account{Name: name, Tenant: t.ID}
	var exports []Export
	service := func(subject string, streamed bool) string {
		exports = append(exports, Export{Subject: subject, Service: true, Streamed: streamed, Accounts: []string{name}})
		im := importAPI(subject)
		acc.Imports = append(acc.Imports, im)
		return im.Local()
	}
	stream := func(subject string) string {
		exports = append(exports, Export{Subject: subject, Accounts: []string{name}})
		acc.Imports = append(acc.Imports, Import{Account: AccountAgentbus, Subject: subject})
		return subject
	}

	client := User{Name: ClientUser(t.ID), Role: "tenant " + t.ID + " client: submit, control, follow its own events",
		Subscribe: []string{"_INBOX.>"}}
	worker := User{Name: WorkerUser(t.ID), Role: "tenant " + t.ID + " worker: pull its own steps, reply, publish progress",
		Subscribe: []string{"_INBOX.>"}}

	client.Publish = append(client.Publish,
		service(submit, false),
		service(control, false),
		service(jsAPI+".CONSUMER.CREATE."+subjects.StreamEvents+".*."+eventsTree, false),
		service(jsAPI+".DIRECT.GET."+subjects.StreamEvents+"."+eventsTree, false),
	)
	for _, s := range eventsByName() {
		client.Publish = append(client.Publish, importAPI(s).Local())
	}
	// The live subject carries each event once stored, with its offset
	// and its workflow's previous one (bus.Follow's way, without a
	// consumer).
	client.Subscribe = append(client.Subscribe, stream(events), stream(live))
	worker.Subscribe = append(worker.Subscribe, stream(control))

	worker.Publish = append(worker.Publish, service(replies, false), service(results, false), service(events, false), service(dead, false))
	caps := slices.Clone(t.Capabilities)
	slices.Sort(caps)
	for _, c := range caps {
		cons, err := StepConsumer(t.ID, c)
		if err != nil {
			return nil, Account{}, err
		}
		step, err := subjects.Step(t.ID, c)
		if err != nil {
			return nil, Account{}, err
		}
		worker.Publish = append(worker.Publish,
			// A step handed back with a verdict (eager dispatch) that the
			// worker cannot finish goes on its step subject, as the
			// orchestrator would have published it.
			service(step, false),
			service(jsAPI+".CONSUMER.CREATE."+subjects.StreamSteps+"."+cons+"."+step, false),
			service(jsAPI+".CONSUMER.INFO."+subjects.StreamSteps+"."+cons, false),
			service(jsAPI+".CONSUMER.MSG.NEXT."+subjects.StreamSteps+"."+cons, true),
			service("$JS.ACK."+subjects.StreamSteps+"."+cons+".>", false),
		)
	}
	acc.Users = []User{client, worker}
	return exports, acc, nil
}

// Users lists every user name of the model, in account order.
func (m *Model) Users() []string {
	var out []string
	for _, a := range m.Accounts {
		for _, u := range a.Users {
			out = append(out, u.Name)
		}
	}
	return out
}

// Account returns the account named name, or false.
func (m *Model) Account(name string) (Account, bool) {
	for _, a := range m.Accounts {
		if a.Name == name {
			return a, true
		}
	}
	return Account{}, false
}
