package bus

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/subjects"
)

// MaxFollowers caps concurrent followers (ordered consumers) of the
// events stream.
const MaxFollowers = 100_000

// EpochKey is the stream metadata key that holds the events stream's epoch.
const EpochKey = "agentbus_epoch"

// ErrIncompatible is wrapped by *IncompatibleError.
var ErrIncompatible = errors.New("bus: existing stream or bucket is incompatible")

// IncompatibleError says which existing stream or bucket differs from what
// agentbus needs, and how. Provision never changes an existing one.
type IncompatibleError struct {
	Kind        string // "stream" or "bucket"
	Name        string
	Differences []string
}

func (e *IncompatibleError) Error() string {
	rm := "nats stream rm " + e.Name
	if e.Kind == "bucket" {
		rm = "nats kv del " + e.Name
	}
	return fmt.Sprintf("bus: %s %s exists with an incompatible configuration (%s); agentbus does not change it: "+
		"start with the settings it was created with, or remove it (%s) to let agentbus recreate it",
		e.Kind, e.Name, strings.Join(e.Differences, "; "), rm)
}

// Unwrap lets errors.Is(err, ErrIncompatible) hold.
func (e *IncompatibleError) Unwrap() error { return ErrIncompatible }

// ErrReplicas is wrapped by *ReplicasError.
var ErrReplicas = errors.New("bus: existing stream or bucket has another replica count")

// ReplicasError says that an existing stream or bucket has Have replicas
// where Want were asked for. Provision changes replicas only when told to
// (StreamsConfig.UpdateReplicas), never in silence.
type ReplicasError struct {
	Kind       string // "stream" or "bucket"
	Name       string
	Have, Want int
}

func (e *ReplicasError) Error() string {
	return fmt.Sprintf("bus: %s %s has %d replicas, want %d (%+d); agentbus changes replicas in place only when asked to",
		e.Kind, e.Name, e.Have, e.Want, e.Want-e.Have)
}

// Unwrap lets errors.Is(err, ErrReplicas) hold.
func (e *ReplicasError) Unwrap() error { return ErrReplicas }

// StreamsConfig sizes the streams and buckets. The zero value means defaults.
type StreamsConfig struct {
	// EventsMaxAge is how long client events are kept; default 7 days.
	EventsMaxAge time.Duration
	// Duplicates is the Nats-Msg-Id dedup window; default 2 minutes.
	Duplicates time.Duration
	// Replicas is the JetStream replication factor; default 1 (3 on a cluster).
	Replicas int
	// CheckpointHistory is how many revisions of each checkpoint are kept; default 64.
	CheckpointHistory int
	// SessionTTL is how long a conversation session (AGENTBUS_SESSIONS) is
	// kept after its newest turn; default 30 days.
	SessionTTL time.Duration
	// UpdateReplicas lets Provision change an existing stream or bucket
	// in place: its replicas (JetStream moves it with no downtime; without
	// it a different replica count is a *ReplicasError), and, with
	// Compress, the S2 compression of the checkpoints bucket and the
	// events stream that deployments provisioned without it lack.
	UpdateReplicas bool
	// Compress stores the checkpoints bucket and the events stream with S2
	// compression (about a tenth of their bytes at rest; see streams). Off
	// by default: on nats-server 2.15.2, `make chaos` (kill -9 and restarts
	// of three clustered servers under load) saw a completed workflow's
	// checkpoint answer "not found" from its bucket's leader, a replay
	// read no event of a stored workflow, and a restarted server not
	// ready within 10 s, in 4 of 5 runs with compression and in none of 3
	// without it. Until that is understood it is for deployments that
	// trade that risk for disk.
	Compress bool
}

func (c *StreamsConfig) setDefaults() {
	if c.EventsMaxAge == 0 {
		c.EventsMaxAge = 7 * 24 * time.Hour
	}
	if c.Duplicates == 0 {
		c.Duplicates = 2 * time.Minute
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.CheckpointHistory == 0 {
		c.CheckpointHistory = 64
	}
	if c.SessionTTL == 0 {
		c.SessionTTL = DefaultSessionTTL
	}
}

// DefaultSessionTTL is StreamsConfig.SessionTTL's default.
const DefaultSessionTTL = 30 * 24 * time.Hour

// Validate reports every problem with the configuration.
func (c StreamsConfig) Validate() error {
	var errs []error
	if c.EventsMaxAge < time.Minute {
		errs = append(errs, fmt.Errorf("bus: events max age %s is below 1m", c.EventsMaxAge))
	}
	if c.Duplicates <= 0 || c.Duplicates > c.EventsMaxAge {
		errs = append(errs, fmt.Errorf("bus: duplicates window %s must be positive and at most the events max age", c.Duplicates))
	}
	if c.Replicas < 1 || c.Replicas > 5 {
		errs = append(errs, fmt.Errorf("bus: replicas %d not in [1, 5]", c.Replicas))
	}
	if c.CheckpointHistory < 1 || c.CheckpointHistory > 64 {
		errs = append(errs, fmt.Errorf("bus: checkpoint history %d not in [1, 64]", c.CheckpointHistory))
	}
	if c.SessionTTL < time.Minute {
		errs = append(errs, fmt.Errorf("bus: session TTL %s is below 1m", c.SessionTTL))
	}
	return errors.Join(errs...)
}

// streams are agentbus's streams. With Compress (--compress-streams) the
// events stream, like the checkpoints bucket (buckets), is S2 compressed:
// the two are what a workflow leaves behind, kept for days, and their
// messages repeat one another. nats-server compresses a message block
// once it is full (4 MiB for a bucket, 8 MiB for the events stream) and a
// read of a sealed block decompresses it once into the block cache. It is
// off by default: make chaos on nats-server 2.15.2 did not pass with it
// (README, Compression); without it each checkpoint revision is
// compressed by the orchestrator instead (workflow/codec.go). A
// deployment provisioned without it keeps working uncompressed;
// --update-streams (StreamsConfig.UpdateReplicas) turns it on in place.
// nats-server 2.15 takes the change at once, but its file store applies
// it only once it loads the stream again (the server's next restart), to
// the blocks it seals from then on: nothing is rewritten, old blocks age
// out as they are.
func (c StreamsConfig) streams() []jetstream.StreamConfig {
	wq := func(name, subject, desc string) jetstream.StreamConfig {
		return jetstream.StreamConfig{
			Name: name, Description: desc, Subjects: []string{subject},
			Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage,
			Duplicates: c.Duplicates, Replicas: c.Replicas,
		}
	}
	return []jetstream.StreamConfig{
		wq(subjects.StreamWorkflows, subjects.AllSubmissions, "agentbus workflow submissions"),
		wq(subjects.StreamSteps, subjects.AllSteps, "agentbus plan steps, one subject per capability"),
		wq(subjects.StreamReplies, subjects.AllReplies, "agentbus step results and failures"),
		{
			Name: subjects.StreamEvents, Description: "agentbus per-workflow client event logs",
			Subjects: []string{subjects.AllEvents}, Retention: jetstream.LimitsPolicy,
			Storage: jetstream.FileStorage, MaxAge: c.EventsMaxAge, Duplicates: c.Duplicates,
			Replicas: c.Replicas, Metadata: map[string]string{EpochKey: uuid.NewString()},
			// Direct get lets a tenant's NATS user read its own events
			// by subject without a consumer (agentbus nats-config).
			AllowDirect: true,
			// Each stored event goes out again on its workflow's live
			// subject, with its sequence and its workflow's previous one:
			// Follow reads those and needs no consumer (follow_live.go).
			RePublish: &jetstream.RePublish{Source: subjects.AllEvents, Destination: subjects.LiveRepublish},
			// A follower of a stream provisioned before republishing, and
			// every tenant-wide follower, has an ordered consumer; the
			// server's default cap of 1,000 per stream would refuse the
			// 1,001st.
			MaxConsumers: MaxFollowers,
			// Kept 7 days: the largest stream at rest (see streams).
			Compression: c.compression(),
		},
		TimersStream(c.Replicas, c.Duplicates),
		// Made at start with the others, not on first use: on a cluster,
		// three nodes creating an R3 stream on their first request at once
		// timed the requests out.
		QueueStream(c.Replicas, c.Duplicates),
		SchedulesStream(c.Replicas, c.Duplicates),
		{
			Name: subjects.StreamDeadLetter, Description: "agentbus steps that exhausted their deliveries",
			Subjects: []string{subjects.AllDeadLetters}, Retention: jetstream.LimitsPolicy,
			Storage: jetstream.FileStorage, MaxAge: 30 * 24 * time.Hour, Duplicates: c.Duplicates,
			Replicas: c.Replicas,
		},
	}
}

// compression is the events stream's compression: S2 with Compress.
func (c StreamsConfig) compression() jetstream.StoreCompression {
	if c.Compress {
		return jetstream.S2Compression
	}
	return jetstream.NoCompression
}

func (c StreamsConfig) buckets() []jetstream.KeyValueConfig {
	return []jetstream.KeyValueConfig{
		// Compressed: a workflow's revisions are near copies of each
		// other (see streams).
		{Bucket: subjects.BucketCheckpoints, Description: "agentbus workflow checkpoints", History: uint8(c.CheckpointHistory),
			Storage: jetstream.FileStorage, Replicas: c.Replicas, Compression: c.Compress},
		{Bucket: subjects.BucketControl, Description: "agentbus control records (cancel)", History: 1, Storage: jetstream.FileStorage, Replicas: c.Replicas},
		{Bucket: subjects.BucketMemory, Description: "agentbus memory agent facts, per tenant", History: 1, Storage: jetstream.FileStorage, Replicas: c.Replicas},
		{Bucket: subjects.BucketAgents, Description: "agentbus agent registrations (per-key TTL)", History: 1, Storage: jetstream.FileStorage,
			Replicas: c.Replicas, LimitMarkerTTL: time.Minute},
		LeasesBucket(c.Replicas),
		SessionsBucket(c.Replicas, c.SessionTTL),
		IdempotencyBucket(c.Replicas),
		ConcurrencyBucket(c.Replicas),
		LimitsBucket(c.Replicas),
		SchedulesBucket(c.Replicas),
	}
}

// SessionsBucket is the configuration of AGENTBUS_SESSIONS: one key per
// conversation session, its newest revision only, dropped ttl after its
// last write (a session forgotten ttl after its newest turn).
func SessionsBucket(replicas int, ttl time.Duration) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: subjects.BucketSessions, Description: "agentbus conversation sessions (turns and rolling summary), per tenant and user",
		History: 1, TTL: ttl, Storage: jetstream.FileStorage, Replicas: replicas}
}

// Provision creates every stream and bucket agentbus needs, or checks that
// the existing ones are compatible. It is idempotent and never changes an
// existing stream except its replicas and its compression, and those only
// with cfg.UpdateReplicas: a difference is reported as an
// *IncompatibleError or a *ReplicasError (all of them joined), a stream
// left uncompressed is logged.
//
// On a cluster that is still forming (no JetStream meta leader yet, fewer
// servers than replicas) Provision waits, saying so in the log, until the
// cluster can place the streams or ctx ends.
func (b *Bus) Provision(ctx context.Context, cfg StreamsConfig) error {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	var said time.Time
	scaled := map[string]bool{}
	// A pass's requests go unanswered while the cluster has no meta
	// leader (a restarted server that has not yet heard from the others):
	// passes are given a second for the first half minute, so that a
	// server is ready about a second after the leader is known, not after
	// a long pass runs out (a restarted node took 10s to serve with 10s
	// passes); then 10s, for a cluster that answers slowly.
	start := time.Now()
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		limit := time.Second
		if time.Since(start) > 30*time.Second {
			limit = 10 * time.Second
		}
		actx, cancel := context.WithTimeout(ctx, limit)
		err := b.provision(actx, cfg, scaled)
		cancel()
		if err == nil {
			b.awaitCurrent(ctx, scaled, cfg.Replicas)
			if cfg.Compress {
				b.log.Warn("streams S2-compressed (--compress-streams): nats-server 2.15.2 can leave compressed blocks it cannot read after a kill -9 (\"s2: unsupported input\"); see the README, Compression")
			}
			return nil
		}
		if !transient(err) || ctx.Err() != nil {
			return err
		}
		if time.Since(said) > 5*time.Second {
			b.log.Info("waiting for the JetStream cluster to place agentbus's streams", "replicas", cfg.Replicas, "err", err)
			said = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bus: provision: %w (last: %w)", ctx.Err(), err)
		case <-time.After(wait):
		}
	}
}

// provision makes one pass over the streams and buckets; the streams it
// scaled (by their stream name) are added to scaled.
func (b *Bus) provision(ctx context.Context, cfg StreamsConfig, scaled map[string]bool) error {
	var errs []error
	for _, want := range cfg.streams() {
		errs = append(errs, b.ensureStream(ctx, want, cfg.UpdateReplicas, scaled))
	}
	for _, want := range cfg.buckets() {
		errs = append(errs, b.ensureBucket(ctx, want, cfg.UpdateReplicas, scaled))
	}
	errs = append(errs, b.ensureObjectStore(ctx, UploadsStore(cfg.Replicas), cfg.UpdateReplicas, scaled))
	errs = append(errs, b.ensureObjectStore(ctx, PayloadsStore(cfg.Replicas), cfg.UpdateReplicas, scaled))
	return errors.Join(errs...)
}

// transient reports whether a provisioning error comes from a cluster that
// is not ready yet (no meta leader, too few servers, a request that timed
// out), not from what agentbus asked for.
func transient(err error) bool {
	if errors.Is(err, ErrIncompatible) || errors.Is(err, ErrReplicas) {
		return false
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch {
		case apiErr.Code == 503, apiErr.Code == 408:
			return true
		case apiErr.ErrorCode == jsErrNoPeers:
			return true
		}
		return false
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrJetStreamNotEnabled)
}

// jsErrNoPeers is nats-server's error code (errors.json) for "no suitable
// peers for placement": fewer servers have joined than the replicas ask
// for. The other not-yet errors (10008 JetStream system temporarily
// unavailable, 10023 insufficient resources) answer 503.
const jsErrNoPeers = 10005

func (b *Bus) ensureStream(ctx context.Context, want jetstream.StreamConfig, update bool, scaled map[string]bool) error {
	s, err := b.js.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		if _, err := b.js.CreateStream(ctx, want); err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return fmt.Errorf("bus: create stream %s: %w", want.Name, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("bus: stream %s: %w", want.Name, err)
	}
	have := s.CachedInfo().Config
	var diffs []string
	diff := func(field string, h, w any) {
		if fmt.Sprint(h) != fmt.Sprint(w) {
			diffs = append(diffs, fmt.Sprintf("%s is %v, want %v", field, h, w))
		}
	}
	hs, ws := slices.Clone(have.Subjects), slices.Clone(want.Subjects)
	slices.Sort(hs)
	slices.Sort(ws)
	diff("subjects", hs, ws)
	diff("retention", have.Retention, want.Retention)
	diff("storage", have.Storage, want.Storage)
	diff("max age", have.MaxAge, want.MaxAge)
	diff("duplicates window", have.Duplicates, want.Duplicates)
	if want.Metadata[EpochKey] != "" && have.Metadata[EpochKey] == "" {
		diffs = append(diffs, "metadata has no "+EpochKey)
	}
	if len(diffs) > 0 {
		diff("replicas", have.Replicas, want.Replicas)
		return &IncompatibleError{Kind: "stream", Name: want.Name, Differences: diffs}
	}
	if err := b.ensureRepublish(ctx, &have, want); err != nil {
		return err
	}
	return b.ensureInPlace(ctx, "stream", want.Name, have, want.Replicas, want.Compression, update, scaled)
}

// ensureRepublish adds the republish wanted to a stream provisioned
// without it (the events stream before live follow), with or without
// --update-streams: it moves no data, and until it is there every
// Follow costs a consumer.
// have becomes the stream's configuration after the update.
func (b *Bus) ensureRepublish(ctx context.Context, have *jetstream.StreamConfig, want jetstream.StreamConfig) error {
	if want.RePublish == nil || have.RePublish != nil && *have.RePublish == *want.RePublish {
		return nil
	}
	next := *have
	next.RePublish = want.RePublish
	if _, err := b.js.UpdateStream(ctx, next); err != nil {
		return fmt.Errorf("bus: stream %s: republish on %s: %w", want.Name, want.RePublish.Destination, err)
	}
	b.log.Info("stream now republishes each stored message for followers without a consumer",
		"stream", want.Name, "source", want.RePublish.Source, "destination", want.RePublish.Destination)
	*have = next
	return nil
}

// ensureInPlace brings what may change in place of a stream (or a
// bucket's or object store's stream) to what is wanted: a replica count
// that differs is a *ReplicasError, or, with update, changed, its stream's
// name noted in scaled; compression wanted and off is logged, or, with
// update, turned on (see streams). Both go in one update.
func (b *Bus) ensureInPlace(ctx context.Context, kind, name string, have jetstream.StreamConfig, replicas int, cmp jetstream.StoreCompression, update bool, scaled map[string]bool) error {
	scale := have.Replicas != replicas
	compress := cmp == jetstream.S2Compression && have.Compression != cmp
	if scale && !update {
		return &ReplicasError{Kind: kind, Name: name, Have: have.Replicas, Want: replicas}
	}
	if compress && !update {
		b.log.Info("stored uncompressed: start with --update-streams to compress it (S2), about a tenth of the disk for checkpoints and events",
			"kind", kind, "name", name)
	}
	if !update || (!scale && !compress) {
		return nil
	}
	from := have.Replicas
	have.Replicas = replicas
	if compress {
		have.Compression = cmp
	}
	if _, err := b.js.UpdateStream(ctx, have); err != nil {
		if !scale {
			return fmt.Errorf("bus: compress %s %s: %w", kind, name, err)
		}
		return fmt.Errorf("bus: scale %s %s from %d to %d replicas: %w", kind, name, from, replicas, err)
	}
	if compress {
		b.log.Info("compression turned on (S2): blocks sealed after each server's next restart are compressed, those written before stay as they are",
			"kind", kind, "name", name)
	}
	if scale {
		b.log.Info("scaling in place", "kind", kind, "name", name, "replicas_was", from, "replicas", replicas)
		scaled[have.Name] = true
	}
	return nil
}

// awaitCurrent waits until every scaled stream has want replicas, all
// current (caught up with its leader), so that losing a server right
// after a scale-up loses nothing. If ctx ends first it says which are
// still catching up and returns: they are scaled, and JetStream goes on.
func (b *Bus) awaitCurrent(ctx context.Context, scaled map[string]bool, want int) {
	if len(scaled) == 0 {
		return
	}
	start := time.Now()
	for len(scaled) > 0 {
		for stream := range scaled {
			if s, err := b.js.Stream(ctx, stream); err == nil && currentReplicas(s.CachedInfo()) >= want {
				delete(scaled, stream)
			}
		}
		if len(scaled) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			b.log.Warn("scaled; replicas still catching up", "streams", slices.Sorted(maps.Keys(scaled)), "replicas", want)
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	b.log.Info("scaled in place: every new replica is current", "replicas", want, "took", time.Since(start).Round(time.Millisecond))
}

// currentReplicas counts a stream's leader and its replicas that are
// current.
func currentReplicas(info *jetstream.StreamInfo) int {
	if info == nil || info.Cluster == nil || info.Cluster.Leader == "" {
		return 0
	}
	n := 1
	for _, p := range info.Cluster.Replicas {
		if p.Current {
			n++
		}
	}
	return n
}

func (b *Bus) ensureBucket(ctx context.Context, want jetstream.KeyValueConfig, update bool, scaled map[string]bool) error {
	kv, err := b.js.KeyValue(ctx, want.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		if _, err := b.js.CreateKeyValue(ctx, want); err != nil && !errors.Is(err, jetstream.ErrBucketExists) {
			return fmt.Errorf("bus: create bucket %s: %w", want.Bucket, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("bus: bucket %s: %w", want.Bucket, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return fmt.Errorf("bus: bucket %s: %w", want.Bucket, err)
	}
	var diffs []string
	if st.History() != int64(want.History) {
		diffs = append(diffs, fmt.Sprintf("history is %d, want %d", st.History(), want.History))
	}
	if want.LimitMarkerTTL > 0 && st.LimitMarkerTTL() == 0 {
		diffs = append(diffs, "per-key TTL is off, want on")
	}
	if want.TTL > 0 && st.TTL() != want.TTL {
		diffs = append(diffs, fmt.Sprintf("TTL is %s, want %s", st.TTL(), want.TTL))
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if len(diffs) > 0 {
		if ok && bs.StreamInfo().Config.Replicas != want.Replicas {
			diffs = append(diffs, fmt.Sprintf("replicas is %d, want %d", bs.StreamInfo().Config.Replicas, want.Replicas))
		}
		return &IncompatibleError{Kind: "bucket", Name: want.Bucket, Differences: diffs}
	}
	if !ok {
		return nil
	}
	var cmp jetstream.StoreCompression
	if want.Compression {
		cmp = jetstream.S2Compression
	}
	return b.ensureInPlace(ctx, "bucket", want.Bucket, bs.StreamInfo().Config, want.Replicas, cmp, update, scaled)
}

func (b *Bus) ensureObjectStore(ctx context.Context, want jetstream.ObjectStoreConfig, update bool, scaled map[string]bool) error {
	os, err := b.js.ObjectStore(ctx, want.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		if _, err := b.js.CreateObjectStore(ctx, want); err != nil && !errors.Is(err, jetstream.ErrBucketExists) {
			return fmt.Errorf("bus: create object store %s: %w", want.Bucket, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("bus: object store %s: %w", want.Bucket, err)
	}
	st, err := os.Status(ctx)
	if err != nil {
		return fmt.Errorf("bus: object store %s: %w", want.Bucket, err)
	}
	bs, ok := st.(*jetstream.ObjectBucketStatus)
	if !ok {
		return nil
	}
	var cmp jetstream.StoreCompression
	if want.Compression {
		cmp = jetstream.S2Compression
	}
	return b.ensureInPlace(ctx, "object store", want.Bucket, bs.StreamInfo().Config, want.Replicas, cmp, update, scaled)
}

// Epoch returns the events stream's epoch: the identity of its incarnation.
// Offsets from another epoch are meaningless.
func (b *Bus) Epoch(ctx context.Context) (string, error) {
	s, err := b.js.Stream(ctx, subjects.StreamEvents)
	if err != nil {
		return "", fmt.Errorf("bus: events stream: %w", err)
	}
	return s.CachedInfo().Config.Metadata[EpochKey], nil
}

// Compressed reports whether stream's store is S2-compressed, as the
// servers hold it (whatever this process's StreamsConfig says: a store
// provisioned without compression keeps it until --update-streams).
func (b *Bus) Compressed(ctx context.Context, stream string) (bool, error) {
	s, err := b.js.Stream(ctx, stream)
	if err != nil {
		return false, fmt.Errorf("bus: stream %s: %w", stream, err)
	}
	return s.CachedInfo().Config.Compression == jetstream.S2Compression, nil
}
