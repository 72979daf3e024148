package instrument

// MetaCarrier is an MCP request's _meta as the carrier of its trace
// context (traceparent, tracestate: where the MCP semantic conventions put
// it), for a propagator to read from or write into. A member that is not
// a string reads as absent.
type MetaCarrier map[string]any

// Get is the member key when it is a string, else "".
func (m MetaCarrier) Get(key string) string {
	v, _ := m[key].(string)
	return v
}

// Set sets the member key to value.
func (m MetaCarrier) Set(key, value string) { m[key] = value }

// Keys are the members' names.
func (m MetaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
