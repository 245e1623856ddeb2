package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// Config is what the node is started with: flags, or the BATON_* environment variables
// when a flag is not given (a flag wins over its variable).
type Config struct {
	ID             string
	HTTPPort       int
	EtcdEndpoints  []string
	LeaseTTL       time.Duration
	ResourceURL    string
	ElectionPrefix string
	Tick           time.Duration
	WriteTimeout   time.Duration
	EtcdTimeout    time.Duration
	// Peers maps node names to the addresses clients reach them at, for the hint a
	// follower gives on POST /next. Optional: without it the hint's address is null.
	Peers map[string]string
}

// TTLSeconds is the lease TTL etcd is asked for: etcd counts whole seconds, so the
// configured milliseconds are rounded up, and at least 1.
func (c *Config) TTLSeconds() int {
	s := int((c.LeaseTTL + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return s
}

func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// ParseConfig reads args (without the program name) and the environment. Errors are one
// line each, naming the flag and its variable.
func ParseConfig(args []string, usageOut io.Writer) (*Config, error) {
	fs := flag.NewFlagSet("go-node", flag.ContinueOnError)
	fs.SetOutput(usageOut)
	id := fs.String("id", envOr("BATON_ID", ""), "node name (env BATON_ID)")
	port := fs.String("http-port", envOr("BATON_HTTP_PORT", "0"), "HTTP port on 127.0.0.1; 0 picks a free one (env BATON_HTTP_PORT)")
	endpoints := fs.String("etcd-endpoints", envOr("BATON_ETCD_ENDPOINTS", ""), "comma-separated etcd client URLs (env BATON_ETCD_ENDPOINTS)")
	ttl := fs.String("lease-ttl-ms", envOr("BATON_LEASE_TTL_MS", "3000"), "session lease TTL in ms, rounded up to whole seconds for etcd (env BATON_LEASE_TTL_MS)")
	resource := fs.String("resource-url", envOr("BATON_RESOURCE_URL", ""), "the fenced resource's write URL (env BATON_RESOURCE_URL)")
	prefix := fs.String("election-prefix", envOr("BATON_ELECTION_PREFIX", "/baton/election"), "etcd key prefix of the election (env BATON_ELECTION_PREFIX)")
	tick := fs.String("tick-ms", envOr("BATON_TICK_MS", "100"), "interval of the leader's tick writes in ms (env BATON_TICK_MS)")
	wt := fs.String("write-timeout-ms", envOr("BATON_WRITE_TIMEOUT_MS", "1000"), "timeout of each write to the resource in ms (env BATON_WRITE_TIMEOUT_MS)")
	et := fs.String("etcd-timeout-ms", envOr("BATON_ETCD_TIMEOUT_MS", "1000"), "timeout of single etcd calls (grant, resign, revoke, leader lookup) in ms (env BATON_ETCD_TIMEOUT_MS)")
	peers := fs.String("peers", envOr("BATON_PEERS", ""), "optional name=url,... of the fleet, for follower hints (env BATON_PEERS)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	c := &Config{ID: *id, ResourceURL: *resource, ElectionPrefix: *prefix, Peers: map[string]string{}}
	var err error
	if c.HTTPPort, err = strconv.Atoi(*port); err != nil || c.HTTPPort < 0 || c.HTTPPort > 65535 {
		return nil, fmt.Errorf("--http-port (BATON_HTTP_PORT): %q is not a port", *port)
	}
	ms := func(name, env, v string) (time.Duration, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("--%s (%s): %q is not a positive number of milliseconds", name, env, v)
		}
		return time.Duration(n) * time.Millisecond, nil
	}
	if c.LeaseTTL, err = ms("lease-ttl-ms", "BATON_LEASE_TTL_MS", *ttl); err != nil {
		return nil, err
	}
	if c.Tick, err = ms("tick-ms", "BATON_TICK_MS", *tick); err != nil {
		return nil, err
	}
	if c.WriteTimeout, err = ms("write-timeout-ms", "BATON_WRITE_TIMEOUT_MS", *wt); err != nil {
		return nil, err
	}
	if c.EtcdTimeout, err = ms("etcd-timeout-ms", "BATON_ETCD_TIMEOUT_MS", *et); err != nil {
		return nil, err
	}
	c.EtcdEndpoints = splitList(*endpoints)
	switch {
	case c.ID == "":
		return nil, fmt.Errorf("--id (BATON_ID) is required")
	case len(c.EtcdEndpoints) == 0:
		return nil, fmt.Errorf("--etcd-endpoints (BATON_ETCD_ENDPOINTS) is required")
	case c.ResourceURL == "":
		return nil, fmt.Errorf("--resource-url (BATON_RESOURCE_URL) is required")
	case c.ElectionPrefix == "":
		return nil, fmt.Errorf("--election-prefix (BATON_ELECTION_PREFIX) must not be empty")
	}
	for _, p := range splitList(*peers) {
		kv := strings.SplitN(p, "=", 2)
		if len(kv) != 2 || kv[0] == "" || kv[1] == "" {
			return nil, fmt.Errorf("--peers (BATON_PEERS): %q is not name=url", p)
		}
		c.Peers[kv[0]] = kv[1]
	}
	return c, nil
}
