package server

import (
	"encoding/json"
	"net/http"

	"github.com/toolhost/toolhost/internal/wire"
)

// health is the /healthz answer's own fields; Options.Health's are
// written beside them, every key in sorted order.
type health struct {
	Status  string `json:"status"`
	Version string `json:"version"`
}

func writeHealth(w http.ResponseWriter, opts Options) {
	var extra map[string]json.RawMessage
	if opts.Health != nil {
		var err error
		if extra, err = wire.Members(opts.Health()); err != nil {
			opts.Logger.Error("the health fields do not encode as a JSON object; /healthz leaves them out", "err", err)
		}
	}
	b, err := wire.Marshal(health{Status: "ok", Version: opts.Version}, extra)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "internal_error", "the health answer could not be encoded; see the server log")
		return
	}
	WriteJSON(w, http.StatusOK, json.RawMessage(b))
}
