// Package approvaltest is the conformance suite every approval.Store must
// pass: the in-memory store, SQLite and PostgreSQL run the same tests.
package approvaltest

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/tools/approval"
)

// Run runs the suite. open returns a fresh, empty store for one subtest.
func Run(t *testing.T, open func(t *testing.T) approval.Store) {
	tests := []struct {
		name string
		fn   func(*testing.T, approval.Store)
	}{
		{"RoundTripKeepsEveryField", testRoundTrip},
		{"ReadsAreScopedByAccount", testAccountScope},
		{"DecideOnlyAPendingUnexpiredApproval", testDecide},
		{"ConsumeOnlyAnApprovedUnexpiredApprovalOfTheDigest", testConsume},
		{"ConcurrentConsumersGetEachApprovalOnce", testConcurrentConsume},
		{"ListFiltersSortsAndPages", testList},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

var base = time.UnixMilli(1_790_000_000_000).UTC()

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func mk(id, account, digest string, at time.Time) approval.Approval {
	return approval.Approval{
		ID: id, AccountID: account, SessionID: "sess", Face: "mcp", Tool: "srv__delete", ToolVersion: "1.0.0",
		SideEffectLevel: "irreversible", Digest: digest, Args: json.RawMessage(`{"path":"/a"}`),
		ExecutionID: "exec-" + id, Status: approval.Pending, RequestedAt: at, ExpiresAt: at.Add(15 * time.Minute),
	}
}

func create(t *testing.T, s approval.Store, as ...approval.Approval) {
	t.Helper()
	for _, a := range as {
		if err := s.CreateApproval(ctx(t), a); err != nil {
			t.Fatalf("create %s: %v", a.ID, err)
		}
	}
}

func same(t *testing.T, got, want approval.Approval) {
	t.Helper()
	if string(got.Args) != string(want.Args) {
		t.Errorf("args = %s, want %s", got.Args, want.Args)
	}
	got.Args, want.Args = nil, nil
	for _, p := range []*time.Time{&got.RequestedAt, &got.ExpiresAt, &got.DecidedAt, &got.ConsumedAt,
		&want.RequestedAt, &want.ExpiresAt, &want.DecidedAt, &want.ConsumedAt} {
		*p = p.UTC()
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func testRoundTrip(t *testing.T, s approval.Store) {
	// Hostile values a store must keep byte for byte.
	a := mk("apr_000000000000000000000001", "acct", "d1", base)
	a.SessionID = "s\u202eevil"
	a.Args = json.RawMessage(`{"html":"</script><script>alert(1)</script>","zw":"a\u200bb","deep":[[[[[[1]]]]]],"big":"` + strings.Repeat("é", 20000) + `"}`)
	create(t, s, a)
	got, err := s.GetApproval(ctx(t), "acct", a.ID)
	if err != nil {
		t.Fatal(err)
	}
	same(t, got, a)

	d := approval.Decision{Approve: true, By: "key_1", Via: approval.ViaREST, Reason: "ok ✓ \"quoted\""}
	dec, err := s.DecideApproval(ctx(t), "acct", a.ID, d, base.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	a.Status, a.DecidedBy, a.DecidedVia, a.Reason, a.DecidedAt = approval.Approved, d.By, d.Via, d.Reason, base.Add(time.Minute)
	same(t, dec, a)
	got, _ = s.GetApproval(ctx(t), "acct", a.ID)
	same(t, got, a)

	con, err := s.ConsumeApproval(ctx(t), "acct", "d1", "exec-2", base.Add(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	a.Status, a.ConsumedBy, a.ConsumedAt = approval.Consumed, "exec-2", base.Add(2*time.Minute)
	same(t, con, a)
	got, _ = s.GetApproval(ctx(t), "acct", a.ID)
	same(t, got, a)
}

func testAccountScope(t *testing.T, s approval.Store) {
	a := mk("apr_000000000000000000000002", "acct", "d1", base)
	create(t, s, a)
	if _, err := s.GetApproval(ctx(t), "other", a.ID); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("get from another account: %v, want ErrNotFound", err)
	}
	if _, err := s.DecideApproval(ctx(t), "other", a.ID, approval.Decision{Approve: true, By: "x"}, base); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("decide from another account: %v, want ErrNotFound", err)
	}
	if _, err := s.DecideApproval(ctx(t), "acct", a.ID, approval.Decision{Approve: true, By: "x"}, base); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ConsumeApproval(ctx(t), "other", "d1", "e", base); !errors.Is(err, approval.ErrNoneApproved) {
		t.Errorf("consume from another account: %v, want ErrNoneApproved", err)
	}
	l, n, err := s.ListApprovals(ctx(t), approval.Query{AccountID: "other", Now: base})
	if err != nil || n != 0 || len(l) != 0 {
		t.Errorf("list of another account = %d %v %v", n, l, err)
	}
	if _, err := s.GetApproval(ctx(t), "acct", "apr_ffffffffffffffffffffffff"); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
}

func testDecide(t *testing.T, s approval.Store) {
	yes := approval.Decision{Approve: true, By: "k", Via: approval.ViaREST}
	no := approval.Decision{By: "k", Via: approval.ViaREST}
	tests := []struct {
		name   string
		first  *approval.Decision // decided before, at base
		d      approval.Decision
		at     time.Duration
		want   approval.Status
		reject approval.Status // the StateError's status, "" for success
	}{
		{"ApprovePending", nil, yes, time.Minute, approval.Approved, ""},
		{"DeclinePending", nil, no, time.Minute, approval.Declined, ""},
		{"ApproveAtTheLastInstant", nil, yes, 15*time.Minute - time.Millisecond, approval.Approved, ""},
		{"ApproveExpired", nil, yes, 15 * time.Minute, "", approval.Expired},
		{"ApproveApproved", &yes, yes, time.Minute, "", approval.Approved},
		{"DeclineApproved", &yes, no, time.Minute, "", approval.Approved},
		{"ApproveDeclined", &no, yes, time.Minute, "", approval.Declined},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := mk("apr_1000000000000000000000"+string(rune('a'+i))+"0", "acct", "dd", base)
			create(t, s, a)
			if tc.first != nil {
				if _, err := s.DecideApproval(ctx(t), "acct", a.ID, *tc.first, base); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.DecideApproval(ctx(t), "acct", a.ID, tc.d, base.Add(tc.at))
			if tc.reject != "" {
				var se *approval.StateError
				if !errors.As(err, &se) || se.Status != tc.reject || !errors.Is(err, approval.ErrNotPending) {
					t.Fatalf("err = %v, want a StateError %s", err, tc.reject)
				}
				return
			}
			if err != nil || got.Status != tc.want || !got.DecidedAt.Equal(base.Add(tc.at)) || got.DecidedBy != "k" {
				t.Fatalf("got %+v, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func testConsume(t *testing.T, s approval.Store) {
	yes := approval.Decision{Approve: true, By: "k", Via: approval.ViaREST}
	pending := mk("apr_200000000000000000000001", "acct", "dp", base)
	declined := mk("apr_200000000000000000000002", "acct", "dd", base)
	approved := mk("apr_200000000000000000000003", "acct", "da", base)
	expiring := mk("apr_200000000000000000000004", "acct", "dx", base)
	create(t, s, pending, declined, approved, expiring)
	for _, id := range []string{approved.ID, expiring.ID} {
		if _, err := s.DecideApproval(ctx(t), "acct", id, yes, base); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.DecideApproval(ctx(t), "acct", declined.ID, approval.Decision{By: "k"}, base); err != nil {
		t.Fatal(err)
	}
	none := []struct {
		name, digest string
		at           time.Duration
	}{
		{"Pending", "dp", time.Minute},
		{"Declined", "dd", time.Minute},
		{"OtherDigest", "da2", time.Minute},
		{"PrefixOfTheDigest", "d", time.Minute},
		{"Expired", "dx", 15 * time.Minute},
	}
	for _, tc := range none {
		if a, err := s.ConsumeApproval(ctx(t), "acct", tc.digest, "e", base.Add(tc.at)); !errors.Is(err, approval.ErrNoneApproved) {
			t.Errorf("%s: consumed %+v, %v; want ErrNoneApproved", tc.name, a, err)
		}
	}
	got, err := s.ConsumeApproval(ctx(t), "acct", "da", "exec-1", base.Add(time.Minute))
	if err != nil || got.ID != approved.ID || got.ConsumedBy != "exec-1" || got.Status != approval.Consumed {
		t.Fatalf("consume = %+v, %v", got, err)
	}
	if _, err := s.ConsumeApproval(ctx(t), "acct", "da", "exec-2", base.Add(time.Minute)); !errors.Is(err, approval.ErrNoneApproved) {
		t.Errorf("second consume: %v, want ErrNoneApproved", err)
	}
	if _, err := s.DecideApproval(ctx(t), "acct", approved.ID, yes, base.Add(time.Minute)); !errors.Is(err, approval.ErrNotPending) {
		t.Errorf("deciding a consumed approval: %v", err)
	}
	if g, _ := s.GetApproval(ctx(t), "acct", expiring.ID); g.Effective(base.Add(15*time.Minute)) != approval.Expired {
		t.Errorf("an approved approval past its expiry is %s", g.Effective(base.Add(15*time.Minute)))
	}
}

func testConcurrentConsume(t *testing.T, s approval.Store) {
	const approvals, callers = 2, 12
	for i := range approvals {
		a := mk("apr_30000000000000000000000"+string(rune('a'+i)), "acct", "dc", base.Add(time.Duration(i)*time.Second))
		create(t, s, a)
		if _, err := s.DecideApproval(ctx(t), "acct", a.ID, approval.Decision{Approve: true, By: "k"}, base); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	got := make(chan string, callers)
	errs := make(chan error, callers)
	for i := range callers {
		wg.Go(func() {
			a, err := s.ConsumeApproval(ctx(t), "acct", "dc", "exec-"+string(rune('a'+i)), base.Add(time.Minute))
			switch {
			case err == nil:
				got <- a.ID
			case !errors.Is(err, approval.ErrNoneApproved):
				errs <- err
			}
		})
	}
	wg.Wait()
	close(got)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	seen := map[string]bool{}
	for id := range got {
		if seen[id] {
			t.Errorf("approval %s consumed twice", id)
		}
		seen[id] = true
	}
	if len(seen) != approvals {
		t.Errorf("%d approvals consumed, want %d", len(seen), approvals)
	}
}

func testList(t *testing.T, s approval.Store) {
	var as []approval.Approval
	for i := range 6 {
		a := mk("apr_40000000000000000000000"+string(rune('a'+i)), "acct", "dl", base.Add(time.Duration(i)*time.Minute))
		if i%2 == 1 {
			a.SessionID = "s2"
		}
		if i == 5 {
			a.Tool = "other_tool"
		}
		as = append(as, a)
	}
	create(t, s, as...)
	if _, err := s.DecideApproval(ctx(t), "acct", as[1].ID, approval.Decision{By: "k"}, base.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DecideApproval(ctx(t), "acct", as[4].ID, approval.Decision{Approve: true, By: "k"}, base.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	// At base+16m, as[0] (expires at 15m, pending) has expired; as[1] is
	// declined; the others are pending or approved and not expired.
	now := base.Add(16 * time.Minute)
	ids := func(l []approval.Approval) []string {
		out := []string{}
		for _, a := range l {
			out = append(out, a.ID[len(a.ID)-1:])
		}
		return out
	}
	tests := []struct {
		name  string
		q     approval.Query
		want  []string
		total int
	}{
		{"All", approval.Query{}, []string{"f", "e", "d", "c", "b", "a"}, 6},
		{"Expired", approval.Query{Status: approval.Expired}, []string{"a"}, 1},
		{"Pending", approval.Query{Status: approval.Pending}, []string{"f", "d", "c"}, 3},
		{"Approved", approval.Query{Status: approval.Approved}, []string{"e"}, 1},
		{"Declined", approval.Query{Status: approval.Declined}, []string{"b"}, 1},
		{"Consumed", approval.Query{Status: approval.Consumed}, []string{}, 0},
		{"Session", approval.Query{SessionID: "s2"}, []string{"f", "d", "b"}, 3},
		{"Tool", approval.Query{Tool: "other_tool"}, []string{"f"}, 1},
		{"ToolIsExact", approval.Query{Tool: "other"}, []string{}, 0},
		{"Page", approval.Query{Offset: 1, Limit: 2}, []string{"e", "d"}, 6},
		{"PagePastTheEnd", approval.Query{Offset: 10, Limit: 2}, []string{}, 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.q
			q.AccountID, q.Now = "acct", now
			l, n, err := s.ListApprovals(ctx(t), q)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(l); n != tc.total || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v (%d), want %v (%d)", got, n, tc.want, tc.total)
			}
		})
	}
}
