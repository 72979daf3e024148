// Package websearch provides the web_search tool: one tool over several real
// search engines — SearXNG (JSON API), Brave Search API, Tavily, and a no-key
// HTML provider (DuckDuckGo's HTML endpoint, the embedded default) parsed with
// goquery.
//
// A call asks the configured providers in order, hedged (hedge.go): the next
// provider is asked as soon as the current one fails or has not answered
// within its hedge delay (1.5 s, or its recent p90), the first good answer
// wins and the requests still in flight are cancelled, and the whole search
// has one deadline (10 s) rather than the sum of the providers' timeouts.
// Identical searches in flight at once share one engine request
// (singleflight), billed once. Timeouts, 429s, 5xx responses and unreadable
// bodies move on to the next provider; a 429 also puts that provider in back-off for as long as
// its Retry-After (or Brave's X-RateLimit-Reset) asks, and the provider is not
// contacted again before then. Providers that failed for other reasons are
// tried last for a short, growing while, but never skipped, so one flaky
// engine cannot make search disappear.
//
// Results are cleaned the same way whichever engine produced them: redirect
// wrappers (DuckDuckGo /l/?uddg=, Google /url?q=, Bing /ck/a, Yahoo RU=) are
// unwrapped, tracking parameters (utm_*, gclid, fbclid, ...) removed,
// duplicates merged, snippets stripped of markup, titles entity-decoded. The
// domain filters (site, allowed_domains, blocked_domains; a domain covers its
// subdomains; wildcards and IP literals are refused) are passed to engines that understand them and then applied
// again here, because many engines ignore them.
//
// Answers are cached (normalized query + options + the providers' identities,
// kind and base URL → results, naming the provider by its current name)
// with a TTL and an entry bound, in memory and, when a directory is given, on
// disk, so that two `toolhost call` processes share it, or, when Deps.Shared
// is given (Redis), there instead, so that replicas share it. A cache hit says
// cached: true and costs no paid unit; a call that got its answer from a
// provider costs one "search_call" unit.
//
// Invariants: provider base URLs come only from the operator's config, never
// from tool arguments; API keys are sent only in the request header the
// engine documents and never appear in results, error messages or logs.
package websearch
