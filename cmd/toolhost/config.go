package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"

	"github.com/toolhost/toolhost/internal/config"
)

// overrides are the flags that override a key of the config file: given
// on the command line or as TOOLHOST_<FLAG>, the flag's value replaces the
// file's. One setting, two spellings — never two settings to reconcile.
var overrides = map[string]func(cfg *config.Config, value string) error{
	"redis": func(cfg *config.Config, v string) error { cfg.Keys.Redis = v; return nil },
	"stateless": func(cfg *config.Config, v string) (err error) {
		cfg.MCP.Stateless, err = strconv.ParseBool(v)
		return err
	},
}

// applyOverrides writes the override flags that were set into cfg.
func applyOverrides(fs *flag.FlagSet, cfg *config.Config) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if o, ok := overrides[f.Name]; ok && err == nil {
			if e := o(cfg, f.Value.String()); e != nil {
				err = fmt.Errorf("--%s: %w", f.Name, e)
			}
		}
	})
	return err
}

// envDefaults sets every setting (a flag in settings) of fs that the
// command line did not set from TOOLHOST_<FLAG> (upper case, dashes as
// underscores).
func envDefaults(fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || !settings[f.Name] || err != nil {
			return
		}
		key := envName(f.Name)
		if v, ok := os.LookupEnv(key); ok {
			if e := fs.Set(f.Name, v); e != nil {
				if isBool(f) {
					err = fmt.Errorf("%s=%q is not a boolean; accepted values: %s", key, v, boolValues)
					return
				}
				err = fmt.Errorf("%s=%q: %w", key, v, e)
			}
		}
	})
	return err
}
