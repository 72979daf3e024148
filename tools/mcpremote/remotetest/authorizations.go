package remotetest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/tools/mcpremote"
)

// authorizations checks the pending authorizations: kept whole, taken
// once however many take a state at the same time, gone at their expiry,
// replaced by the next of their server, and expired ones dropped by a put.
func authorizations(t *testing.T, st mcpremote.Store) {
	t.Helper()
	ctx := context.Background()
	now := time.UnixMilli(1_796_540_400_000)
	put := func(state, server string, at time.Time) mcpremote.PendingAuthorization {
		t.Helper()
		p := mcpremote.PendingAuthorization{State: mcpremote.StateKey(state), AccountID: "acct_auth", ServerID: server,
			Sealed: []byte{1, 0, 255, byte(len(state))}, ExpiresAt: at.Add(mcpremote.AuthorizeTimeout)}
		if err := st.PutMCPAuthorization(ctx, p); err != nil {
			t.Fatalf("put %s: %v", state, err)
		}
		return p
	}
	unknown := func(state string, at time.Time) {
		t.Helper()
		if _, err := st.TakeMCPAuthorization(ctx, mcpremote.StateKey(state), at); !errors.Is(err, mcpremote.ErrUnknownState) {
			t.Fatalf("take %.20q: %v, want ErrUnknownState", state, err)
		}
	}
	want := put("s1", "mcpsrv_1", now)
	put("s2", "mcpsrv_2", now)
	var wg sync.WaitGroup
	got := make(chan mcpremote.PendingAuthorization, 16)
	for range 16 {
		wg.Go(func() {
			p, err := st.TakeMCPAuthorization(ctx, mcpremote.StateKey("s1"), now)
			switch {
			case err == nil:
				got <- p
			case !errors.Is(err, mcpremote.ErrUnknownState):
				t.Errorf("take: %v", err)
			}
		})
	}
	wg.Wait()
	close(got)
	if len(got) != 1 {
		t.Fatalf("16 takes of one state: %d got it, want 1", len(got))
	}
	p := <-got
	if p.AccountID != want.AccountID || p.ServerID != want.ServerID || !bytes.Equal(p.Sealed, want.Sealed) || !p.ExpiresAt.Equal(want.ExpiresAt) {
		t.Fatalf("taken %+v, want %+v", p, want)
	}
	put("s3", "mcpsrv_2", now) // replaces s2
	unknown("s2", now)
	unknown("s3", now.Add(mcpremote.AuthorizeTimeout)) // expired
	unknown("s3", now)                                 // and gone
	put("s4", "mcpsrv_3", now)
	put("s5", "mcpsrv_4", now.Add(2*mcpremote.AuthorizeTimeout)) // drops s4, expired by then
	unknown("s4", now)
	for _, hostile := range []string{"", "s5 ", "S5", "\x00", strings.Repeat("s5", 1<<19)} {
		unknown(hostile, now)
	}
	if _, err := st.TakeMCPAuthorization(ctx, mcpremote.StateKey("s5"), now.Add(2*mcpremote.AuthorizeTimeout)); err != nil {
		t.Fatalf("take s5: %v", err)
	}
}
