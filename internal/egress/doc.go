// Package egress is how toolhost reaches the outside: the SSRF policy
// every outbound connection is dialed under, and the wording of network
// failures for callers.
//
// The policy (Policy, from the operator's fetch.allow_private list) lets a
// connection reach public addresses only, unless the allow-list names the
// address, its range or the host. A Dialer applies it where it cannot be
// dodged: it resolves the name itself, checks every candidate address, and
// checks again in the socket's Control hook on the exact address it
// connects to, so a name that resolves differently between check and
// connect (DNS rebinding) cannot slip through. Addresses are judged in
// every spelling a resolver or browser accepts (inet_aton's numeric forms,
// IPv4 inside IPv6, NAT64, 6to4), names through IDNA as the transport
// will dial them, and localhost names are refused before any lookup.
// fetch_page and the remote MCP gateway dial through it, so one policy
// governs every request toolhost makes toward an address a caller chose.
//
// Describe words a failed network operation for a caller. Go's errors name
// the resolver ("lookup x on 10.0.0.2:53"), the URL of the request (an
// upstream route, a search engine) and the address dialled. Callers see
// the kind of failure; the full error belongs in the server log.
package egress
