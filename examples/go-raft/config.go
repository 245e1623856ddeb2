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
	ID       string
	HTTPPort int
	// RaftPort is where this node listens for its peers' Raft traffic, on 127.0.0.1.
	RaftPort int
	// RaftPeers maps every server's ID (this node's included) to the address this node
	// dials it at; its own entry is where it listens.
	RaftPeers map[string]string
	// PeerOrder is the servers' IDs in the order given (the bootstrap configuration).
	PeerOrder []string
	// ElectionTimeout is hashicorp/raft's HeartbeatTimeout and ElectionTimeout: a
	// follower (or candidate) that hears no leader for a random time between it and
	// twice it starts an election.
	ElectionTimeout time.Duration
	// LeaderLease is hashicorp/raft's LeaderLeaseTimeout: a leader that has not heard
	// from a quorum for this long steps down. This node also sends a protected write
	// only within this long after the start of a VerifyLeader that succeeded.
	LeaderLease  time.Duration
	ResourceURL  string
	Tick         time.Duration
	WriteTimeout time.Duration
	Dir          string
	// Peers maps node names to the addresses clients reach them at, for the hint a
	// follower gives on POST /next. Optional: without it the hint's address is null.
	Peers map[string]string
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

// nameValues parses name=value,... ; flag and env name the input in errors.
func nameValues(s, flagName, env string) (map[string]string, []string, error) {
	m := map[string]string{}
	var order []string
	for _, p := range splitList(s) {
		kv := strings.SplitN(p, "=", 2)
		if len(kv) != 2 || kv[0] == "" || kv[1] == "" {
			return nil, nil, fmt.Errorf("--%s (%s): %q is not name=value", flagName, env, p)
		}
		m[kv[0]] = kv[1]
		order = append(order, kv[0])
	}
	return m, order, nil
}

// ParseConfig reads args (without the program name) and the environment. Errors are one
// line each, naming the flag and its variable.
func ParseConfig(args []string, usageOut io.Writer) (*Config, error) {
	fs := flag.NewFlagSet("go-raft", flag.ContinueOnError)
	fs.SetOutput(usageOut)
	id := fs.String("id", envOr("BATON_ID", ""), "node name, its Raft server ID (env BATON_ID)")
	port := fs.String("http-port", envOr("BATON_HTTP_PORT", "0"), "HTTP port on 127.0.0.1; 0 picks a free one (env BATON_HTTP_PORT)")
	raftPort := fs.String("raft-port", envOr("BATON_RAFT_PORT", ""), "port on 127.0.0.1 for the peers' Raft traffic (env BATON_RAFT_PORT)")
	raftPeers := fs.String("raft-peers", envOr("BATON_RAFT_PEERS", ""), "every server as id=host:port, comma-separated, this node included (env BATON_RAFT_PEERS)")
	et := fs.String("election-timeout-ms", envOr("BATON_ELECTION_TIMEOUT_MS", "1000"), "least election timeout in ms: raft's HeartbeatTimeout and ElectionTimeout (env BATON_ELECTION_TIMEOUT_MS)")
	lease := fs.String("leader-lease-ms", envOr("BATON_LEADER_LEASE_MS", "500"), "raft's LeaderLeaseTimeout in ms, at most the election timeout (env BATON_LEADER_LEASE_MS)")
	resource := fs.String("resource-url", envOr("BATON_RESOURCE_URL", ""), "the fenced resource's write URL (env BATON_RESOURCE_URL)")
	tick := fs.String("tick-ms", envOr("BATON_TICK_MS", "100"), "interval of the leader's tick writes in ms (env BATON_TICK_MS)")
	wt := fs.String("write-timeout-ms", envOr("BATON_WRITE_TIMEOUT_MS", "1000"), "timeout of each write to the resource in ms (env BATON_WRITE_TIMEOUT_MS)")
	dir := fs.String("dir", envOr("BATON_NODE_DIR", ""), "directory for the Raft log, stable store and snapshots; kept across restarts (env BATON_NODE_DIR)")
	peers := fs.String("peers", envOr("BATON_PEERS", ""), "optional name=url,... of the fleet, for follower hints (env BATON_PEERS)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	c := &Config{ID: *id, ResourceURL: *resource, Dir: *dir}
	var err error
	if c.HTTPPort, err = strconv.Atoi(*port); err != nil || c.HTTPPort < 0 || c.HTTPPort > 65535 {
		return nil, fmt.Errorf("--http-port (BATON_HTTP_PORT): %q is not a port", *port)
	}
	if c.RaftPort, err = strconv.Atoi(*raftPort); err != nil || c.RaftPort <= 0 || c.RaftPort > 65535 {
		return nil, fmt.Errorf("--raft-port (BATON_RAFT_PORT): %q is not a port", *raftPort)
	}
	ms := func(name, env, v string) (time.Duration, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("--%s (%s): %q is not a positive number of milliseconds", name, env, v)
		}
		return time.Duration(n) * time.Millisecond, nil
	}
	if c.ElectionTimeout, err = ms("election-timeout-ms", "BATON_ELECTION_TIMEOUT_MS", *et); err != nil {
		return nil, err
	}
	if c.LeaderLease, err = ms("leader-lease-ms", "BATON_LEADER_LEASE_MS", *lease); err != nil {
		return nil, err
	}
	if c.Tick, err = ms("tick-ms", "BATON_TICK_MS", *tick); err != nil {
		return nil, err
	}
	if c.WriteTimeout, err = ms("write-timeout-ms", "BATON_WRITE_TIMEOUT_MS", *wt); err != nil {
		return nil, err
	}
	if c.RaftPeers, c.PeerOrder, err = nameValues(*raftPeers, "raft-peers", "BATON_RAFT_PEERS"); err != nil {
		return nil, err
	}
	if c.Peers, _, err = nameValues(*peers, "peers", "BATON_PEERS"); err != nil {
		return nil, err
	}
	switch {
	case c.ID == "":
		return nil, fmt.Errorf("--id (BATON_ID) is required")
	case c.RaftPeers[c.ID] == "":
		return nil, fmt.Errorf("--raft-peers (BATON_RAFT_PEERS): %q names no entry for this node, %s", *raftPeers, c.ID)
	case c.ResourceURL == "":
		return nil, fmt.Errorf("--resource-url (BATON_RESOURCE_URL) is required")
	case c.Dir == "":
		return nil, fmt.Errorf("--dir (BATON_NODE_DIR) is required: the Raft log lives there")
	case c.LeaderLease > c.ElectionTimeout:
		return nil, fmt.Errorf("--leader-lease-ms (BATON_LEADER_LEASE_MS): %v is above the election timeout %v (hashicorp/raft refuses it)", c.LeaderLease, c.ElectionTimeout)
	}
	return c, nil
}
