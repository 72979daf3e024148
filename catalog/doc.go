// Package catalog describes tools as data: the versioned specification every
// tool publishes (schemas, annotations, side-effect level, replay safety,
// Chinese and English text, the descriptions inside its schemas included)
// and the registry that lists them, and the one rule of which language a
// request gets (RequestLang).
//
// Nothing here runs a tool. The MCP tools/list answer, the hosted-tool function
// definitions and the tools REST API are all generated from these specs, so a
// tool's contract is written once, in its constructor.
package catalog
