package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb"
)

// claimEntry is the one kind of entry this node appends to the Raft log: a new leader's
// claim, appended once per leadership before it acts. Its term, as the FSM sees it when
// the entry commits, is the leadership's fencing token.
type claimEntry struct {
	Node string `json:"node"`
}

// claimFSM is the replicated state: who made the latest claim, and in which term. It
// tells a follower whom to point clients to, and it tells the leader its token.
type claimFSM struct {
	mu   sync.Mutex
	node string
	term uint64
}

// Apply records a committed claim and answers its term: the term the leader appended it
// in (the Raft log keeps it), so at most one node claims under each term.
func (f *claimFSM) Apply(l *raft.Log) interface{} {
	var c claimEntry
	if err := json.Unmarshal(l.Data, &c); err != nil {
		return err
	}
	f.mu.Lock()
	f.node, f.term = c.Node, l.Term
	f.mu.Unlock()
	return l.Term
}

// latest is the last claim applied: (node, term), "" if none.
func (f *claimFSM) latest() (string, uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.node, f.term
}

func (f *claimFSM) Snapshot() (raft.FSMSnapshot, error) {
	node, term := f.latest()
	return &claimSnapshot{Node: node, Term: term}, nil
}

func (f *claimFSM) Restore(r io.ReadCloser) error {
	defer r.Close()
	var s claimSnapshot
	if err := json.NewDecoder(r).Decode(&s); err != nil {
		return err
	}
	f.mu.Lock()
	f.node, f.term = s.Node, s.Term
	f.mu.Unlock()
	return nil
}

type claimSnapshot struct {
	Node string `json:"node"`
	Term uint64 `json:"term"`
}

func (s *claimSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := json.NewEncoder(sink).Encode(s); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *claimSnapshot) Release() {}

// peerAddrs dials each server by its ID at the address --raft-peers gives for it, not at
// the address the Raft configuration holds: each node may be given another address for
// the same peer (a proxy of its own in front of it), and the configuration, replicated
// and stored, is one for all.
type peerAddrs map[string]string

func (p peerAddrs) ServerAddr(id raft.ServerID) (raft.ServerAddress, error) {
	if a, ok := p[string(id)]; ok {
		return raft.ServerAddress(a), nil
	}
	return "", fmt.Errorf("no address for server %q in --raft-peers", id)
}

// startRaft opens the node's stores under cfg.Dir (kept across restarts), its transport
// on 127.0.0.1:RaftPort, and the Raft instance; a node without state bootstraps the
// cluster from --raft-peers, every server a voter (each node does the same, with the
// same IDs: hashicorp/raft's documented way to start a cluster of known servers).
func startRaft(cfg *Config, fsm *claimFSM) (*raft.Raft, error) {
	logger := hclog.New(&hclog.LoggerOptions{Name: "raft " + cfg.ID, Level: hclog.Info, Output: os.Stderr})
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.HeartbeatTimeout = cfg.ElectionTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLease
	rc.Logger = logger
	if err := raft.ValidateConfig(rc); err != nil {
		return nil, fmt.Errorf("raft config: %v", err)
	}

	store, err := raftboltdb.NewBoltStore(filepath.Join(cfg.Dir, "raft.db"))
	if err != nil {
		return nil, fmt.Errorf("bolt store in %s: %v", cfg.Dir, err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.Dir, 2, logger)
	if err != nil {
		return nil, fmt.Errorf("snapshot store in %s: %v", cfg.Dir, err)
	}
	self := cfg.RaftPeers[cfg.ID]
	advertise, err := net.ResolveTCPAddr("tcp", self)
	if err != nil {
		return nil, fmt.Errorf("--raft-peers: this node's address %q: %v", self, err)
	}
	trans, err := raft.NewTCPTransportWithConfig(net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.RaftPort)), advertise,
		&raft.NetworkTransportConfig{
			ServerAddressProvider: peerAddrs(cfg.RaftPeers),
			Logger:                logger,
			MaxPool:               3,
			// Consul's and Nomad's figure: an RPC to a peer that does not answer
			// gives up after this long.
			Timeout: 10 * time.Second,
		})
	if err != nil {
		return nil, fmt.Errorf("raft transport on port %d: %v", cfg.RaftPort, err)
	}

	existing, err := raft.HasExistingState(store, store, snaps)
	if err != nil {
		return nil, fmt.Errorf("reading the raft state in %s: %v", cfg.Dir, err)
	}
	if !existing {
		var servers []raft.Server
		for _, id := range cfg.PeerOrder {
			servers = append(servers, raft.Server{
				Suffrage: raft.Voter,
				ID:       raft.ServerID(id),
				Address:  raft.ServerAddress(cfg.RaftPeers[id]),
			})
		}
		if err := raft.BootstrapCluster(rc, store, store, snaps, trans, raft.Configuration{Servers: servers}); err != nil {
			return nil, fmt.Errorf("bootstrap: %v", err)
		}
	}
	return raft.NewRaft(rc, fsm, store, store, snaps, trans)
}
