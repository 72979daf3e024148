package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// replicasTarget is n `toolhost serve --dev --stateless` replicas on one
// PostgreSQL and one Redis (-postgres, -redis) behind Debian's HAProxy
// (round robin, the configuration of docs/operations.md) listening on the
// target's address. A shell runs them all and stops them all on SIGTERM;
// the server CPU the report shows is the shell's, so only the rates
// compare.
func replicasTarget(cfg config, n int) target {
	return target{
		name: fmt.Sprintf("toolhost ×%d behind haproxy", n),
		tool: "get_time",
		args: map[string]any{},
		start: func(ctx context.Context, addr, tmp string) (*exec.Cmd, error) {
			if cfg.postgres == "" || cfg.redis == "" {
				return nil, fmt.Errorf("the replica targets need -postgres and -redis")
			}
			pg := cfg.postgres + sep(cfg.postgres) + fmt.Sprintf("search_path=mcpload_%d", os.Getpid())
			var lines, servers []string
			for i := range n {
				port, err := freePort()
				if err != nil {
					return nil, err
				}
				servers = append(servers, fmt.Sprintf("  server r%d 127.0.0.1:%d check inter 500ms fall 2 rise 1", i+1, port))
				lines = append(lines, fmt.Sprintf("%q serve --dev --stateless --addr 127.0.0.1:%d --data %q --postgres %q --redis %q &",
					cfg.toolhost, port, filepath.Join(tmp, fmt.Sprint("data", i)), pg, cfg.redis))
			}
			hcfg := filepath.Join(tmp, "haproxy.cfg")
			conf := strings.Join(append([]string{"global", "  maxconn 4096", "defaults", "  mode http", "  timeout connect 2s",
				"  timeout client 120s", "  timeout server 120s", "  option forwardfor", "  option redispatch", "  retries 3",
				"frontend toolhost", "  bind " + addr, "  default_backend replicas", "backend replicas", "  balance roundrobin",
				"  option httpchk GET /healthz"}, servers...), "\n") + "\n"
			if err := os.WriteFile(hcfg, []byte(conf), 0o600); err != nil {
				return nil, err
			}
			// The replicas and HAProxy at once (the replicas' migrations take
			// turns on an advisory lock; HAProxy sends a request a replica
			// refuses to the other); TERM stops them all.
			script := "trap 'kill $(jobs -p) 2>/dev/null; wait' TERM\n" + strings.Join(lines, "\n") +
				fmt.Sprintf("\n\"$(command -v haproxy || echo /usr/sbin/haproxy)\" -db -f %q &\nwait\n", hcfg)
			cmd, err := command(ctx, tmp, "sh", "-c", script)
			if err != nil {
				return nil, err
			}
			return cmd, cmd.Start()
		},
	}
}

func sep(url string) string {
	if strings.Contains(url, "?") {
		return "&"
	}
	return "?"
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
