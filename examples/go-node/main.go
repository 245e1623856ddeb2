// Command go-node is a reference leader-election node for Baton, written the way Go
// services commonly elect a leader: etcd's own concurrency package (a Session holding a
// lease, an Election campaigning on it), with the leader key's create revision as the
// fencing token. It follows the node contract Baton's own node follows: the same flags
// or BATON_* variables, the same HTTP interface, the same protected writes to Baton's
// fenced resource. See README.md.
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

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/pkg/logutil"
	"go.uber.org/zap"
)

func logf(id, format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "%s go-node %s: %s\n", time.Now().Format("15:04:05.000"), id, fmt.Sprintf(format, args...))
}

func main() {
	cfg, err := ParseConfig(os.Args[1:], os.Stderr)
	if err != nil {
		if err.Error() != "flag: help requested" {
			fmt.Fprintf(os.Stderr, "go-node: %v\n", err)
		}
		os.Exit(2)
	}

	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.HTTPPort)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "go-node %s: listen: %v\n", cfg.ID, err)
		os.Exit(1)
	}
	// The line Baton's supervisor reads to learn the port (useful with --http-port 0).
	fmt.Printf("LISTENING %s\n", ln.Addr())

	// etcd's client logs JSON through zap; keep its warnings and errors only.
	lcfg := logutil.DefaultZapLoggerConfig
	lcfg.Level = zap.NewAtomicLevelAt(zap.WarnLevel)
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.EtcdEndpoints,
		DialTimeout: 2 * time.Second,
		LogConfig:   &lcfg,
		// AutoSyncInterval stays 0: the client must keep using the endpoints it was
		// given (Baton puts proxies there), not the members' own advertised URLs.
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "go-node %s: etcd client: %v\n", cfg.ID, err)
		os.Exit(1)
	}
	defer cli.Close()

	node := NewNode(cfg, cli)
	srv := &http.Server{Handler: node.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			fmt.Fprintf(os.Stderr, "go-node %s: HTTP server: %v\n", cfg.ID, err)
			os.Exit(3)
		}
	}()
	logf(cfg.ID, "listening on %s; etcd %v; lease TTL %d s (asked %v); resource %s",
		ln.Addr(), cfg.EtcdEndpoints, cfg.TTLSeconds(), cfg.LeaseTTL, cfg.ResourceURL)

	done := make(chan struct{})
	go func() {
		node.Run()
		close(done)
	}()

	// SIGTERM or SIGINT: stop writing, resign, revoke the lease, exit 0. (SIGKILL and
	// SIGSTOP, which Baton uses for its faults, cannot be caught, by design.)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	<-sigs
	logf(cfg.ID, "shutting down")
	close(node.shutdown)
	select {
	case <-done:
	case <-time.After(cfg.WriteTimeout + 3*cfg.EtcdTimeout + time.Second):
		logf(cfg.ID, "gave up waiting for a clean step-down")
	}
	_ = srv.Close()
}
