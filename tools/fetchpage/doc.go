// Package fetchpage provides the fetch_page tool: it fetches one http(s) URL
// on behalf of a model and returns the page's main content as Markdown or
// text, a PDF's text per page, or plain text/JSON as is, in pages of
// max_length characters.
//
// Invariants:
//   - No connection reaches a loopback, private, link-local, CGNAT,
//     multicast, reserved or otherwise non-public address unless the operator
//     listed it in Config.AllowPrivate. The check runs in internal/egress's
//     dialer on the resolved address the socket connects to (so DNS
//     rebinding cannot pass) and every redirect hop dials through the same
//     dialer.
//   - Proxies from the environment are never used.
//   - Bodies are read through size caps after decompression, so a
//     compression bomb costs at most the cap.
//   - The extractor reads at most Config.MaxExtractTextBytes of a page's
//     text (its work grows with the square of it); a page cut there says
//     so in the result (page_cut).
//   - Page text is returned as untrusted data, never as instructions.
package fetchpage
