package loop

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/toolhost/toolhost/tools/approval"
)

// What an answer does with its approval, by the approval's status: a
// pending one is decided, an approved one runs, a decline of anything
// but a consumed approval is history; approving a declined, consumed or
// expired one, or declining a consumed one, is refused (409); a changed
// echo is refused (400) whatever the status.
func TestAnswerAgainstApprovalStatus(t *testing.T) {
	a := approval.Approval{ID: "apr_000000000000000000000001", Tool: "roll_dice", Args: json.RawMessage(`{"count":1,"sides":6}`),
		ExpiresAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	cases := []struct {
		status      approval.Status
		approve     bool
		echo        string // "" not echoed
		decide, run bool
		refused     string
		http        int
	}{
		{approval.Pending, true, "", true, true, "", 0},
		{approval.Pending, false, "", true, false, "", 0},
		{approval.Approved, true, "", false, true, "", 0},
		{approval.Approved, false, "", false, false, "", 0},
		{approval.Declined, false, "", false, false, "", 0},
		{approval.Expired, false, "", false, false, "", 0},
		{approval.Declined, true, "", false, false, ReasonApprovalNotPending, http.StatusConflict},
		{approval.Consumed, true, "", false, false, ReasonApprovalNotPending, http.StatusConflict},
		{approval.Consumed, false, "", false, false, ReasonApprovalNotPending, http.StatusConflict},
		{approval.Expired, true, "", false, false, ReasonApprovalExpired, http.StatusConflict},
		// The same arguments in another key order and spacing are the same.
		{approval.Pending, true, `{ "sides": 6, "count": 1 }`, true, true, "", 0},
		{approval.Pending, true, `{"count":1,"sides":20}`, false, false, ReasonApprovalMismatch, http.StatusBadRequest},
		{approval.Approved, true, `{"count":1,"sides":6,"x":null}`, false, false, ReasonApprovalMismatch, http.StatusBadRequest},
		{approval.Pending, true, `not json`, false, false, ReasonApprovalMismatch, http.StatusBadRequest},
	}
	for _, tc := range cases {
		a := a
		a.Status = tc.status
		ans := ApprovalAnswer{ID: a.ID, Approve: tc.approve}
		if tc.echo != "" {
			ans.Echoed, ans.Name, ans.Args = true, "roll_dice", json.RawMessage(tc.echo)
		}
		got, err := check(ans, a)
		var ae *ApprovalError
		switch {
		case tc.refused != "":
			if !errors.As(err, &ae) || ae.Reason != tc.refused || ae.Status != tc.http {
				t.Errorf("%s approve=%t echo=%q: %v, want %s", tc.status, tc.approve, tc.echo, err, tc.refused)
			}
		case err != nil:
			t.Errorf("%s approve=%t echo=%q: %v", tc.status, tc.approve, tc.echo, err)
		case got.decide != tc.decide || got.run != tc.run:
			t.Errorf("%s approve=%t: decide %t run %t, want %t %t", tc.status, tc.approve, got.decide, got.run, tc.decide, tc.run)
		}
	}
	// Another tool's name with the same arguments.
	a.Status = approval.Pending
	if _, err := check(ApprovalAnswer{ID: a.ID, Approve: true, Echoed: true, Name: "delete_note", Args: a.Args}, a); err == nil {
		t.Error("an echo naming another tool was accepted")
	}
}

// The call id of an approved call derives from the approval's id.
func TestApprovalCallID(t *testing.T) {
	if got := ApprovalCallID("apr_0123456789abcdef01234567"); got != "call_0123456789abcdef01234567" {
		t.Errorf("ApprovalCallID = %q", got)
	}
}
