// Command go-raft is a reference leader-election node for Baton on hashicorp/raft: the
// nodes elect among themselves (node contract's "no backend" mode), each a Raft server
// whose log and stable store live in its directory. Leadership comes from LeaderCh and
// State(); the fencing token is the Raft term of the leadership's claim entry, the
// first entry it commits (at most one leader per term); each protected write goes only
// after VerifyLeader() confirmed the leadership, within the leader lease of its start.
// It follows the node contract Baton's own node follows: the same flags or BATON_*
// variables, the same HTTP interface, the same protected writes to Baton's fenced
// resource. See README.md.
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func logf(id, format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "%s go-raft %s: %s\n", time.Now().Format("15:04:05.000"), id, fmt.Sprintf(format, args...))
}

func main() {
	cfg, err := ParseConfig(os.Args[1:], os.Stderr)
	if err != nil {
		if err.Error() != "flag: help requested" {
			fmt.Fprintf(os.Stderr, "go-raft: %v\n", err)
		}
		os.Exit(2)
	}

	fsm := &claimFSM{}
	r, err := startRaft(cfg, fsm)
	if err != nil {
		fmt.Fprintf(os.Stderr, "go-raft %s: %v\n", cfg.ID, err)
		os.Exit(1)
	}

	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.HTTPPort)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "go-raft %s: listen: %v\n", cfg.ID, err)
		os.Exit(1)
	}
	// The line Baton's supervisor reads to learn the port (useful with --http-port 0).
	fmt.Printf("LISTENING %s\n", ln.Addr())

	node := NewNode(cfg, r, fsm)
	srv := &http.Server{Handler: node.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			fmt.Fprintf(os.Stderr, "go-raft %s: HTTP server: %v\n", cfg.ID, err)
			os.Exit(3)
		}
	}()
	logf(cfg.ID, "listening on %s; raft on 127.0.0.1:%d, peers %v; election timeout %v, leader lease %v; resource %s; dir %s",
		ln.Addr(), cfg.RaftPort, cfg.RaftPeers, cfg.ElectionTimeout, cfg.LeaderLease, cfg.ResourceURL, cfg.Dir)

	done := make(chan struct{})
	go func() {
		node.Run()
		close(done)
	}()

	// SIGTERM or SIGINT: stop writing, shut Raft down, exit 0. (SIGKILL and SIGSTOP,
	// which Baton uses for its faults, cannot be caught, by design.)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	<-sigs
	logf(cfg.ID, "shutting down")
	close(node.shutdown)
	select {
	case <-done:
	case <-time.After(cfg.WriteTimeout + time.Second):
		logf(cfg.ID, "gave up waiting for a clean step-down")
	}
	_ = r.Shutdown().Error()
	_ = srv.Close()
}
