package loop

import "slices"

// callNames are the three kinds of tool name a run tells apart: its hosted
// tools, the caller's own functions, and any other name, which the model
// invented. An invented name is a hosted call that fails at lookup
// (unknown_tool, §6.14 of the tool-call seed): the executor refuses it,
// the model gets the refusal with the names it may use, and the loop goes
// on. A run without hosted tools invents nothing: every call is the
// caller's, as without toolhost.
type callNames struct {
	hosted  map[string]bool
	caller  map[string]bool
	visible []string // hosted and caller names, sorted (tools.Proposal.Visible)
}

func newCallNames(defs, callerFns []Function) callNames {
	hosted := make(map[string]bool, len(defs))
	for _, d := range defs {
		hosted[d.Name] = true
	}
	n := callNames{hosted: hosted, caller: make(map[string]bool, len(callerFns))}
	for _, f := range callerFns {
		n.caller[f.Name] = true
	}
	n.visible = make([]string, 0, len(hosted)+len(n.caller))
	for name := range hosted {
		n.visible = append(n.visible, name)
	}
	for name := range n.caller {
		if !hosted[name] {
			n.visible = append(n.visible, name)
		}
	}
	slices.Sort(n.visible)
	return n
}

// host adds a tool the run hosts from now on (read_result, offered once a
// result came back cut): hosted, and visible to the executor's lookup.
func (n *callNames) host(name string) {
	n.hosted[name] = true
	if i, found := slices.BinarySearch(n.visible, name); !found {
		n.visible = slices.Insert(n.visible, i, name)
	}
}

// runs reports whether the loop runs a call of that name itself: a hosted
// tool, or an invented name (which fails at lookup).
func (n callNames) runs(name string) bool {
	return n.hosted[name] || (len(n.hosted) > 0 && !n.caller[name])
}

// classify gives every call of the answer an id (some upstreams omit
// them) and sorts them: the ones the loop runs (hosted and invented) as
// Calls of the round, the caller's counted.
func classify(resp *UpstreamResponse, round int, n callNames) (calls []ToolCall, hostedCalls []Call, callerCalls int, idsAdded bool) {
	calls = resp.Message.ToolCalls
	for i := range calls {
		if calls[i].ID == "" {
			calls[i].ID = newCallID()
			idsAdded = true
		}
		if n.runs(calls[i].Name) {
			hostedCalls = append(hostedCalls, Call{Round: round, Index: i, ID: calls[i].ID, Name: calls[i].Name, Args: calls[i].Args})
		} else {
			callerCalls++
		}
	}
	return calls, hostedCalls, callerCalls, idsAdded
}

// onlyHosted drops the invented calls of a round that ends the loop: they
// are not skipped hosted calls but part of the answer the caller gets.
func onlyHosted(calls []Call, hosted map[string]bool) []Call {
	return slices.DeleteFunc(calls, func(c Call) bool { return !hosted[c.Name] })
}
