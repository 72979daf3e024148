package keys

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/toolhost/toolhost/internal/ttlcache"
)

// Refusal codes, stable for clients.
const (
	CodeRateLimited       = "rate_limited"
	CodeConcurrencyLimit  = "concurrency_limited"
	CodeMonthlyCapReached = "monthly_cap_reached"
	CodeScopeMissing      = "scope_missing"
	CodeLimitsUnavailable = "limits_unavailable"
)

// Refusal is a call refused before execution. RetryAfter is set when waiting
// helps.
type Refusal struct {
	Code       string
	Message    string
	RetryAfter time.Duration
}

func (r *Refusal) Error() string { return r.Code + ": " + r.Message }

// Options configure a Service.
type Options struct {
	Store   Store
	Limiter Limiter
	// Prices maps a tool name to its price per paid unit; tools not listed
	// cost 1 per unit.
	Prices map[string]float64
	// CacheTTL bounds how long a key's limits and revocation may be served
	// from memory (so a PATCH or revoke reaches every replica within it).
	// Default 2 s.
	CacheTTL time.Duration
	// ConcurrencyRetryHint is the retry_after given to a call refused for
	// concurrency, where no exact time is known. Default 500 ms.
	ConcurrencyRetryHint time.Duration
	Now                  func() time.Time
	Logger               *slog.Logger
}

// Service authenticates keys, admits calls under their limits and meters
// paid units.
type Service struct {
	opts Options
	// cache holds keys by hash and by "id:"+id, each for at most
	// CacheTTL on the Now clock.
	cache *ttlcache.Cache[*Key]
	mu    sync.Mutex
	// touched is when each key's use was last recorded. It is kept here,
	// not on the cached *Key, which every concurrent request shares and
	// must only read.
	touched map[string]time.Time
	// touches are the background writes of last use; Close waits for them.
	touches sync.WaitGroup
}

// New returns a Service.
func New(opts Options) *Service {
	if opts.CacheTTL <= 0 {
		opts.CacheTTL = 2 * time.Second
	}
	if opts.ConcurrencyRetryHint <= 0 {
		opts.ConcurrencyRetryHint = 500 * time.Millisecond
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Limiter == nil {
		opts.Limiter = NewMemoryLimiter(opts.Now)
	}
	s := &Service{opts: opts, touched: map[string]time.Time{}}
	s.cache = ttlcache.New[*Key](ttlcache.Options{TTL: opts.CacheTTL, MaxEntries: 10_000, Now: opts.Now})
	return s
}

// load reads a cached key from the store: cacheKey is a hash or "id:"+id.
func (s *Service) load(ctx context.Context, cacheKey string) (*Key, error) {
	if id, ok := strings.CutPrefix(cacheKey, "id:"); ok {
		return s.opts.Store.KeyByID(ctx, id)
	}
	return s.opts.Store.KeyByHash(ctx, cacheKey)
}

// Authenticate resolves a presented secret to its key. It returns an error
// wrapping ErrInvalidKey or ErrRevoked when the key must be refused.
func (s *Service) Authenticate(ctx context.Context, secret string) (*Key, error) {
	if !strings.HasPrefix(secret, SecretPrefix) || len(secret) > 200 {
		return nil, ErrInvalidKey
	}
	hash := HashSecret(secret)
	k, err := s.lookup(ctx, hash)
	if errors.Is(err, ErrNotFound) {
		return nil, ErrInvalidKey
	}
	if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	if k.RevokedAt != nil {
		return nil, ErrRevoked
	}
	s.touch(k)
	return k, nil
}

func (s *Service) lookup(ctx context.Context, cacheKey string) (*Key, error) {
	return s.cache.Get(ctx, cacheKey, func(ctx context.Context) (*Key, error) { return s.load(ctx, cacheKey) })
}

// touch records last use at most once a minute per key, off the call path.
// The shared *Key is not written: concurrent requests read it.
func (s *Service) touch(k *Key) {
	now := s.opts.Now()
	s.mu.Lock()
	last, ok := s.touched[k.ID]
	if !ok && k.LastUsedAt != nil {
		last, ok = *k.LastUsedAt, true
	}
	if ok && now.Sub(last) < time.Minute {
		s.mu.Unlock()
		return
	}
	if len(s.touched) > 10000 {
		s.touched = map[string]time.Time{}
	}
	s.touched[k.ID] = now
	s.mu.Unlock()
	s.touches.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.opts.Store.TouchKey(ctx, k.ID, now); err != nil {
			s.opts.Logger.Warn("record key use", "key_id", k.ID, "err", err)
		}
	})
}

// Close waits for the background writes of last use to finish, so the
// store can be closed after it. The Service must not be used afterwards.
func (s *Service) Close() {
	s.touches.Wait()
}

// Admission describes a call asking to run.
type Admission struct {
	KeyID     string
	AccountID string
	Face      string // "mcp", "hosted", "cli" or "console"
	Tool      string
	Paid      bool          // the tool bills units
	Lease     string        // unique id of the call (its execution id)
	Timeout   time.Duration // how long the call may hold a concurrency slot
	// At is when the call began on the caller's clock (the executor's,
	// which stamps its journal record): the call is billed in At's month,
	// so its usage and its record agree on the month even across a
	// month's last second. Zero means the service's Now.
	At time.Time
	// MaxUnits is the most paid units the call can use (run_code: its
	// timeout in seconds); 0 means 1. It is what Reserve holds against the
	// monthly cap while the call runs.
	MaxUnits float64
}

// Ticket is an admitted call. Done must be called once when it ends.
type Ticket struct {
	s        *Service
	a        Admission
	key      *Key
	month    string
	reserved float64
	held     bool // Reserve succeeded: Done settles the usage
	slot     bool
	once     sync.Once
	// stopRenew ends the renewal of the slot's lease and waits for it.
	stopRenew func()
}

// SlotLease is how long a concurrency slot outlives its last renewal: a
// call renews its slot every third of it while it runs, so a replica that
// dies mid-call gives its slots back within SlotLease, not at the end of
// the call's deadline.
const SlotLease = 6 * time.Second

// Admit checks the caller's limits in order — scope, calls per minute and
// concurrent calls (MCP only), monthly cap (paid tools, both faces) — and
// returns a Ticket, or a *Refusal. A call without a key (development mode,
// the command line) is admitted unmetered.
func (s *Service) Admit(ctx context.Context, a Admission) (*Ticket, error) {
	t, err := s.Limit(ctx, a)
	if err != nil {
		return nil, err
	}
	if err := t.Reserve(ctx, a.Paid, a.MaxUnits); err != nil {
		t.Done(0)
		return nil, err
	}
	return t, nil
}

// Limit is the first half of Admit, cheap enough to run before a call's
// arguments are even parsed: the key's scope for the slot, calls per
// minute and concurrent calls. A call refused here costs the server no
// parsing or validation. Reserve completes the admission.
func (s *Service) Limit(ctx context.Context, a Admission) (*Ticket, error) {
	at := a.At
	if at.IsZero() {
		at = s.opts.Now()
	}
	t := &Ticket{s: s, a: a, month: Month(at)}
	if a.KeyID == "" {
		return t, nil
	}
	k, err := s.lookup(ctx, "id:"+a.KeyID)
	if err != nil {
		return nil, fmt.Errorf("admit: key %s: %w", a.KeyID, err)
	}
	t.key = k
	if k.RevokedAt != nil {
		return nil, &Refusal{Code: CodeScopeMissing, Message: "this API key has been revoked"}
	}
	// The console's playground calls as its signed-in key, as /mcp does.
	switch a.Face {
	case "mcp", "console":
		if !k.Has(ScopeMCP) {
			return nil, &Refusal{Code: CodeScopeMissing, Message: "this API key lacks the mcp scope"}
		}
	case "hosted":
		if !k.Has(ScopeHosted) {
			return nil, &Refusal{Code: CodeScopeMissing, Message: "this API key lacks the hosted scope"}
		}
	}
	if a.Face == "mcp" || a.Face == "console" {
		if n := k.Limits.CallsPerMinute; n > 0 {
			ok, retry, err := s.opts.Limiter.TakeCall(ctx, k.ID, n)
			if err != nil {
				return nil, s.unavailable(err)
			}
			if !ok {
				return nil, &Refusal{Code: CodeRateLimited, RetryAfter: retry,
					Message: fmt.Sprintf("this API key allows %d calls per minute; retry after %d ms", n, retry.Milliseconds())}
			}
		}
		if n := k.Limits.ConcurrentCalls; n > 0 {
			ok, err := s.opts.Limiter.Acquire(ctx, k.ID, a.Lease, n, SlotLease)
			if err != nil {
				return nil, s.unavailable(err)
			}
			if !ok {
				retry := s.opts.ConcurrencyRetryHint
				return nil, &Refusal{Code: CodeConcurrencyLimit, RetryAfter: retry,
					Message: fmt.Sprintf("this API key allows %d concurrent calls and all are in use; retry after %d ms", n, retry.Milliseconds())}
			}
			t.slot = true
			t.stopRenew = t.renewSlot()
		}
	}
	return t, nil
}

// renewSlot renews the slot's lease every third of SlotLease until the
// returned function is called, which waits for it to stop.
func (t *Ticket) renewSlot() func() {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(SlotLease / 3)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				ctx, cancel := context.WithTimeout(context.Background(), SlotLease/3)
				// A renewal that fails is tried again at the next tick.
				_, _ = t.s.opts.Limiter.Renew(ctx, t.key.ID, t.a.Lease, SlotLease)
				cancel()
			}
		}
	}()
	return func() { close(stop); <-done }
}

// Reserve holds the most a paid call can cost against the key's monthly
// cap: maxUnits (at least 1) times the tool's price. When less than that is
// left but at least one unit, the rest of the cap is held and Budget says
// how many units the call may use, so concurrent calls can never bill past
// the cap together (they did when one unit was held per call). The real
// cost is settled by Done.
func (t *Ticket) Reserve(ctx context.Context, paid bool, maxUnits float64) error {
	t.a.Paid = paid
	if !paid || t.key == nil {
		return nil
	}
	s, k := t.s, t.key
	price := s.price(t.a.Tool)
	want := max(maxUnits, 1) * price
	ok, used, err := s.opts.Store.ReserveCost(ctx, k.ID, t.month, want, k.Limits.MonthlyUnitsCap)
	if err == nil && !ok && price > 0 {
		// Less than the maximum is left: hold whole units of what is.
		if left := math.Floor((k.Limits.MonthlyUnitsCap-used)/price) * price; left >= price {
			want = left
			ok, used, err = s.opts.Store.ReserveCost(ctx, k.ID, t.month, want, k.Limits.MonthlyUnitsCap)
		}
	}
	if err != nil {
		return s.unavailable(err)
	}
	if !ok {
		return &Refusal{Code: CodeMonthlyCapReached,
			Message: fmt.Sprintf("this API key has used %.4g of its %.4g monthly units; paid tools are refused until next month (free tools still work)", used, k.Limits.MonthlyUnitsCap)}
	}
	t.reserved, t.held = want, true
	return nil
}

// Meter admits a call of a paid tool that expects to cost nothing (its
// answer is cached): nothing is held against the monthly cap, so a key at
// its cap still gets it, and Done still records the call and any units it
// used after all.
func (t *Ticket) Meter() {
	t.a.Paid = true
	t.reserved, t.held = 0, t.key != nil
}

// Budget is how many paid units the admitted call may use: what Reserve
// held, in units; 0 means no limit (no cap, a free tool, no key).
func (t *Ticket) Budget() float64 {
	if t.key == nil || !t.a.Paid || t.key.Limits.MonthlyUnitsCap <= 0 {
		return 0
	}
	price := t.s.price(t.a.Tool)
	if price <= 0 {
		return 0
	}
	return t.reserved / price
}

func (s *Service) unavailable(err error) error {
	s.opts.Logger.Error("limit state unavailable", "err", err)
	return &Refusal{Code: CodeLimitsUnavailable, RetryAfter: time.Second, Message: "the limit service is unavailable; retry shortly"}
}

func (s *Service) price(tool string) float64 {
	if p, ok := s.opts.Prices[tool]; ok {
		return p
	}
	return 1
}

func (t *Ticket) releaseSlot() {
	if !t.slot {
		return
	}
	t.stopRenew()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.s.opts.Limiter.Release(ctx, t.key.ID, t.a.Lease); err != nil {
		t.s.opts.Logger.Warn("release concurrency slot", "key_id", t.key.ID, "err", err)
	}
}

// Done ends an admitted call: the slot is released and the paid units the
// call used are settled against the reservation. Safe to call twice.
func (t *Ticket) Done(units float64) { t.settle(1, units) }

// Withdraw ends an admission whose call does not run under it: a deferred
// call enqueued as a job, whose run is admitted, metered and billed on its
// own (a call counted once, when it runs). What Reserve held is released;
// no call and no unit is recorded.
func (t *Ticket) Withdraw() { t.settle(0, 0) }

func (t *Ticket) settle(calls int64, units float64) {
	t.once.Do(func() {
		t.releaseSlot()
		if t.key == nil || !t.a.Paid || !t.held {
			return
		}
		// The call was told its budget; it never bills past it (a run
		// stopped at its deadline may report one more started second).
		if b := t.Budget(); b > 0 && units > b {
			units = b
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		row := UsageRow{AccountID: t.key.AccountID, KeyID: t.key.ID, Month: t.month, Tool: t.a.Tool,
			Calls: calls, Units: units, Cost: units * t.s.price(t.a.Tool)}
		if err := t.s.opts.Store.SettleUsage(ctx, row, t.reserved); err != nil {
			t.s.opts.Logger.Error("settle usage", "key_id", t.key.ID, "tool", t.a.Tool, "units", units, "err", err)
		}
	})
}

var accountPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// CreateKey creates a key (and its account when new) and returns the key and
// its secret, which is never shown again.
func (s *Service) CreateKey(ctx context.Context, accountID, name string, scopes []string, limits Limits) (*Key, string, error) {
	if !accountPattern.MatchString(accountID) {
		return nil, "", fmt.Errorf("%w: account %q: want 1–64 lower-case letters, digits, '-' or '_'", ErrInvalidInput, accountID)
	}
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 {
		return nil, "", fmt.Errorf("%w: a key needs a name of 1–200 characters", ErrInvalidInput)
	}
	sc, err := NormalizeScopes(scopes)
	if err != nil {
		return nil, "", err
	}
	if err := limits.Validate(); err != nil {
		return nil, "", err
	}
	now := s.opts.Now().UTC()
	if _, err := s.opts.Store.Account(ctx, accountID); errors.Is(err, ErrNotFound) {
		if err := s.opts.Store.CreateAccount(ctx, Account{ID: accountID, Name: accountID, CreatedAt: now}); err != nil {
			return nil, "", fmt.Errorf("create account %s: %w", accountID, err)
		}
	} else if err != nil {
		return nil, "", err
	}
	secret, err := NewSecret()
	if err != nil {
		return nil, "", err
	}
	k := Key{ID: NewID("key"), AccountID: accountID, Name: name, Prefix: secret[:len(SecretPrefix)+6],
		Hash: HashSecret(secret), Scopes: sc, Limits: limits, CreatedAt: now}
	if err := s.opts.Store.CreateKey(ctx, k); err != nil {
		return nil, "", fmt.Errorf("create key: %w", err)
	}
	return &k, secret, nil
}

// Revoke revokes a key; later requests with it get 401.
func (s *Service) Revoke(ctx context.Context, id string) error {
	if err := s.opts.Store.RevokeKey(ctx, id, s.opts.Now().UTC()); err != nil {
		return err
	}
	s.forget()
	return nil
}

// KeyByID returns a key by id, from the cache for at most CacheTTL (so a
// change of its limits reaches every replica within it).
func (s *Service) KeyByID(ctx context.Context, id string) (*Key, error) {
	return s.lookup(ctx, "id:"+id)
}

// SetLimits replaces a key's limits.
func (s *Service) SetLimits(ctx context.Context, id string, l Limits) error {
	if err := l.Validate(); err != nil {
		return err
	}
	if err := s.opts.Store.SetLimits(ctx, id, l); err != nil {
		return err
	}
	s.forget()
	return nil
}

func (s *Service) forget() { s.cache.Clear() }

// Now reads the service's clock: the one calls admitted without a time
// are billed on, and the month a usage report defaults to.
func (s *Service) Now() time.Time { return s.opts.Now() }

// Store returns the service's store (for listing and usage reports).
func (s *Service) Store() Store { return s.opts.Store }

// Limiter is the limit state the service keeps (in Redis when replicas
// share it), for other limits that must hold across replicas.
func (s *Service) Limiter() Limiter { return s.opts.Limiter }

// Bootstrap creates the first admin key when the store holds no key at all,
// and returns its secret (created=false when keys already exist).
func (s *Service) Bootstrap(ctx context.Context) (secret string, created bool, err error) {
	n, err := s.opts.Store.CountKeys(ctx)
	if err != nil {
		return "", false, err
	}
	if n > 0 {
		return "", false, nil
	}
	_, secret, err = s.CreateKey(ctx, "admin", "bootstrap admin key", AllScopes, Limits{})
	if err != nil {
		return "", false, err
	}
	return secret, true, nil
}

// ValidAccount says whether id is an account id a key may be created for
// (lower-case letters, digits, '_' and '-', 1 to 64, a letter or digit
// first).
func ValidAccount(id string) bool { return accountPattern.MatchString(id) }
