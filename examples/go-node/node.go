package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
)

// How long a node that resigned waits before it campaigns again (Baton's Rust node
// waits as long), so that another candidate can take over.
const rejoinAfterResign = time.Second

// How often a node asks etcd who leads, for its 409 hints.
const hintInterval = time.Second

// Why a leadership ended.
const (
	reasonLost     = "session_lost" // session.Done(): the lease expired or stopped being renewed
	reasonFenced   = "fenced"       // the resource rejected a write: a newer token exists
	reasonResigned = "resigned"     // POST /resign
	reasonShutdown = "shutdown"     // SIGTERM or SIGINT
)

// session is one etcd session (one lease) and what this node knows of its lease's life.
type session struct {
	sess   *concurrency.Session
	cancel context.CancelFunc // the session's context (concurrency.WithContext)
	// stopObserving ends this node's own keepalive listener on the lease.
	stopObserving context.CancelFunc

	mu       sync.Mutex
	deadline time.Time // local estimate of when the lease expires at etcd
}

func (s *session) remaining() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := time.Until(s.deadline); d > 0 {
		return d
	}
	return 0
}

// leadership is one term of this node as leader: from winning the campaign until its
// writes have stopped.
type leadership struct {
	token  int64
	sess   *session
	elect  *concurrency.Election
	resign atomic.Bool
	wake   chan struct{} // cap 1: a resign was asked
	ended  chan struct{} // closed once it has stopped acting and let the key and lease go
}

type nextReply struct {
	status      int // 200, 409, 503
	token       int64
	first, last uint64
}

type nextReq struct {
	count uint64
	reply chan nextReply // cap 1
}

// Node is the elector and the leader's work.
type Node struct {
	cfg      *Config
	cli      *clientv3.Client
	res      *ResourceClient
	m        *Metrics
	shutdown chan struct{}
	queued   chan struct{} // cap 1: a /next request is waiting

	mu        sync.Mutex
	role      string
	lead      *leadership // while it acts as leader
	accepting bool        // whether /next requests are queued (after the claim)
	queue     []*nextReq
	election  *concurrency.Election // the current campaign's, for hints
	hint      string                // the election's current value, "" if none
}

func NewNode(cfg *Config, cli *clientv3.Client) *Node {
	return &Node{
		cfg:      cfg,
		cli:      cli,
		res:      NewResourceClient(cfg.ResourceURL, cfg.WriteTimeout),
		m:        NewMetrics(cfg.ID),
		shutdown: make(chan struct{}),
		queued:   make(chan struct{}, 1),
		role:     "follower",
	}
}

func (n *Node) logf(format string, args ...interface{}) {
	logf(n.cfg.ID, format, args...)
}

func (n *Node) setRole(role string) {
	n.mu.Lock()
	n.role = role
	n.mu.Unlock()
	n.m.update(func(m *Metrics) { m.role = role })
}

func (n *Node) shuttingDown() bool {
	select {
	case <-n.shutdown:
		return true
	default:
		return false
	}
}

// sleep waits d, or less if the node shuts down.
func (n *Node) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-n.shutdown:
	}
}

// Run campaigns for ever (until shutdown): campaign on a new session, lead until the
// session ends, a write is fenced or a resign is asked, stop writing, resign, close the
// session, and campaign again.
func (n *Node) Run() {
	go n.keepHint()
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	for !n.shuttingDown() {
		n.setRole("candidate")
		n.m.update(func(m *Metrics) { m.campaigns++ })
		started := time.Now()
		s, e, err := n.campaign()
		if err != nil {
			n.m.update(func(m *Metrics) { m.campaignFailures++ })
			n.setRole("follower")
			if n.shuttingDown() {
				return
			}
			n.logf("campaign failed: %v", err)
			// Randomised, so that failed candidates do not retry in lockstep.
			n.sleep(time.Duration(100+rng.Intn(200)) * time.Millisecond)
			continue
		}
		n.m.observeCampaignLatency(time.Since(started).Seconds())
		if reason := n.serve(s, e); reason == reasonResigned {
			n.sleep(rejoinAfterResign)
		}
	}
}

// campaign makes a new session and campaigns on it until it wins; on error the
// session is closed.
func (n *Node) campaign() (*session, *concurrency.Election, error) {
	s, err := n.newSession()
	if err != nil {
		return nil, nil, err
	}
	e := concurrency.NewElection(s.sess, n.cfg.ElectionPrefix)
	n.mu.Lock()
	n.election = e
	n.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A campaign waits for ever in the queue; it must end when the session does (or
	// the node shuts down), since a key whose lease is gone wins nothing.
	go func() {
		select {
		case <-s.sess.Done():
		case <-n.shutdown:
		case <-ctx.Done():
		}
		cancel()
	}()
	err = e.Campaign(ctx, n.cfg.ID)
	if err == nil {
		select {
		case <-s.sess.Done():
			err = errors.New("the session ended as the campaign returned")
		default:
		}
	}
	if err != nil {
		n.endSession(s)
		return nil, nil, err
	}
	return s, e, nil
}

// newSession is concurrency.NewSession with the configured TTL, bounded by the etcd
// timeout (a lease grant waits for a connection otherwise), plus a listener on the
// session's keepalives that keeps the local estimate of the lease's expiry.
func (n *Node) newSession() (*session, error) {
	ttl := n.cfg.TTLSeconds()
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	timer := time.AfterFunc(n.cfg.EtcdTimeout, cancel)
	sess, err := concurrency.NewSession(n.cli, concurrency.WithTTL(ttl), concurrency.WithContext(ctx))
	if !timer.Stop() {
		// The timeout cancelled the context: even if a session came back, its
		// keepalives are already cancelled.
		if err == nil {
			go n.revoke(sess.Lease())
		}
		cancel()
		return nil, fmt.Errorf("no lease granted within %v", n.cfg.EtcdTimeout)
	}
	if err != nil {
		cancel()
		return nil, fmt.Errorf("new session: %v", err)
	}
	s := &session{sess: sess, cancel: cancel, deadline: start.Add(time.Duration(ttl) * time.Second)}
	// A second listener on the same lease: etcd's client keeps one keepalive per lease
	// and copies each answer to every listener, so this sends nothing more. It must be
	// cancelled with the session, or it alone would keep the lease alive.
	octx, ocancel := context.WithCancel(ctx)
	s.stopObserving = ocancel
	ch, err := n.cli.KeepAlive(octx, sess.Lease())
	if err == nil {
		go func() {
			for r := range ch {
				at := time.Now()
				s.mu.Lock()
				s.deadline = at.Add(time.Duration(r.TTL) * time.Second)
				s.mu.Unlock()
				n.m.update(func(m *Metrics) { m.renewals++ })
			}
		}()
	}
	return s, nil
}

// endSession stops the session's keepalives and revokes its lease (an expired lease's
// revoke fails, which is fine).
func (n *Node) endSession(s *session) {
	s.stopObserving()
	s.sess.Orphan()
	n.revoke(s.sess.Lease())
	s.cancel()
	n.mu.Lock()
	n.election = nil
	n.mu.Unlock()
}

func (n *Node) revoke(id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.EtcdTimeout)
	defer cancel()
	_, _ = n.cli.Revoke(ctx, id)
}

// serve is one leadership: act as leader until it must stop, stop every write, and only
// then resign the key and close the session.
func (n *Node) serve(s *session, e *concurrency.Election) string {
	l := &leadership{token: e.Rev(), sess: s, elect: e, wake: make(chan struct{}, 1), ended: make(chan struct{})}
	n.mu.Lock()
	n.role = "leader"
	n.lead = l
	n.mu.Unlock()
	n.m.update(func(m *Metrics) {
		m.role = "leader"
		m.leadersActing = 1
		m.fenceToken = l.token
		m.transitions++
	})
	n.logf("leader: token %d (key %s), lease %d s", l.token, e.Key(), n.cfg.TTLSeconds())

	reason := n.act(l)

	// act() is the only writer and has returned: no write of this leadership is still
	// awaited. Only now does the node let leadership go.
	n.mu.Lock()
	n.accepting = false
	queue := n.queue
	n.queue = nil
	n.lead = nil
	n.role = "follower"
	n.mu.Unlock()
	for _, q := range queue {
		q.reply <- nextReply{status: 409}
	}
	n.m.update(func(m *Metrics) {
		m.role = "follower"
		m.leadersActing = 0
		m.fenceToken = 0
		m.transitions++
	})
	n.logf("stopped acting: token %d, %s", l.token, reason)
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.EtcdTimeout)
	// Deletes the leader key if it is still this leadership's (same create revision).
	_ = e.Resign(ctx)
	cancel()
	n.endSession(s)
	close(l.ended)
	return reason
}

// stopReason says whether the leadership must end, and why ("" if not).
func (n *Node) stopReason(l *leadership) string {
	select {
	case <-n.shutdown:
		return reasonShutdown
	case <-l.sess.sess.Done():
		return reasonLost
	default:
	}
	if l.resign.Load() {
		return reasonResigned
	}
	return ""
}

// act is the leader's work, every write one at a time: claim (announce the token,
// learn the sequence's last number), then a tick write every tick and a seq write for
// each batch of queued /next requests. Returns why it stopped.
func (n *Node) act(l *leadership) string {
	p := &pacer{first: 25 * time.Millisecond, max: n.cfg.WriteTimeout}
	var lastSeq uint64
	for {
		if r := n.stopReason(l); r != "" {
			return r
		}
		res := n.write(l, claimOp(), p)
		if res.kind == writeAccepted {
			lastSeq = res.lastSeq
			break
		}
		if res.kind == writeRejected {
			return reasonFenced
		}
	}
	n.mu.Lock()
	n.accepting = true
	n.mu.Unlock()

	nextTick := time.Now()
	var tickN uint64
	for {
		if r := n.stopReason(l); r != "" {
			return r
		}
		// The tick goes first when due: under load the queue is never empty.
		if now := time.Now(); !now.Before(nextTick) {
			tickN++
			if nextTick = nextTick.Add(n.cfg.Tick); !nextTick.After(now) {
				// Fell behind (a slow write, a pause): no burst of catch-up ticks.
				nextTick = now.Add(n.cfg.Tick)
			}
			res := n.write(l, tickOp(tickN), p)
			if res.kind == writeRejected {
				return reasonFenced
			}
			if res.kind == writeAccepted && res.lastSeq > lastSeq {
				lastSeq = res.lastSeq
			}
			continue
		}
		n.mu.Lock()
		batch := n.queue
		n.queue = nil
		n.mu.Unlock()
		if len(batch) > 0 {
			var count uint64
			for _, q := range batch {
				count += q.count
			}
			first, last := lastSeq+1, lastSeq+count
			res := n.write(l, seqOp(first, last), p)
			// Numbers of a write that may have landed are never reused: gaps are
			// allowed, handing a number out twice is not.
			lastSeq = last
			if res.kind != writeRejected && res.lastSeq > lastSeq {
				lastSeq = res.lastSeq
			}
			next := first
			for _, q := range batch {
				switch res.kind {
				case writeAccepted:
					q.reply <- nextReply{status: 200, token: l.token, first: next, last: next + q.count - 1}
					next += q.count
				case writeRejected:
					q.reply <- nextReply{status: 409}
				default:
					q.reply <- nextReply{status: 503}
				}
			}
			if res.kind == writeRejected {
				return reasonFenced
			}
			continue
		}
		t := time.NewTimer(time.Until(nextTick))
		select {
		case <-n.shutdown:
		case <-l.sess.sess.Done():
		case <-l.wake:
		case <-n.queued:
		case <-t.C:
		}
		t.Stop()
	}
}

// pacer spaces out writes that failed (refused, reset, timed out): after a failure the
// next write goes no sooner than a pause after the failed one was sent, doubling from
// 25 ms up to the write timeout.
type pacer struct {
	first, max, pause time.Duration
	failures          int
}

// write is one protected write, with its metrics; a failed one is paced.
func (n *Node) write(l *leadership, op interface{}, p *pacer) writeResult {
	sent := time.Now()
	res := n.res.Write(n.cfg.ID, l.token, op)
	switch res.kind {
	case writeAccepted:
		if p.failures > 0 {
			n.logf("resource answers again after %d failed writes", p.failures)
		}
		p.failures, p.pause = 0, 0
		n.m.update(func(m *Metrics) { m.writesAccepted++ })
	case writeRejected:
		n.m.update(func(m *Metrics) { m.fencingRejections++ })
		n.logf("write rejected by the fence: token %d < max_token %d; stepping down", l.token, res.maxToken)
	case writeBehind:
		n.m.update(func(m *Metrics) { m.writesBehind++ })
	case writeFailed:
		n.m.update(func(m *Metrics) { m.writesFailed++ })
		p.failures++
		if p.failures == 1 {
			n.logf("write failed (%v); retrying, paced up to %v", res.err, p.max)
		}
		if p.pause == 0 {
			p.pause = p.first
		} else if p.pause *= 2; p.pause > p.max {
			p.pause = p.max
		}
		if wait := time.Until(sent.Add(p.pause)); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-n.shutdown:
			case <-l.sess.sess.Done():
			case <-l.wake:
			}
			t.Stop()
		}
	}
	return res
}

// Submit queues a /next batch of count numbers for the leader's next seq write; nil if
// this node does not take them (not leading, or not yet claimed).
func (n *Node) Submit(count uint64) *nextReq {
	n.mu.Lock()
	if !n.accepting {
		n.mu.Unlock()
		return nil
	}
	q := &nextReq{count: count, reply: make(chan nextReply, 1)}
	n.queue = append(n.queue, q)
	n.mu.Unlock()
	select {
	case n.queued <- struct{}{}:
	default:
	}
	return q
}

// Resign asks the current leadership to step down and returns it (nil if not leading).
func (n *Node) Resign() *leadership {
	n.mu.Lock()
	l := n.lead
	n.mu.Unlock()
	if l == nil {
		return nil
	}
	l.resign.Store(true)
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return l
}

// keepHint refreshes, every second, who the election says leads: e.Leader() on the
// current campaign's election, or the same query (first key by create revision under
// the prefix) between campaigns.
func (n *Node) keepHint() {
	for !n.shuttingDown() {
		n.mu.Lock()
		e := n.election
		n.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.EtcdTimeout)
		var resp *clientv3.GetResponse
		var err error
		if e != nil {
			resp, err = e.Leader(ctx)
		} else {
			resp, err = n.cli.Get(ctx, n.cfg.ElectionPrefix+"/", clientv3.WithFirstCreate()...)
			if err == nil && len(resp.Kvs) == 0 {
				err = concurrency.ErrElectionNoLeader
			}
		}
		cancel()
		switch {
		case err == nil:
			n.mu.Lock()
			n.hint = string(resp.Kvs[0].Value)
			n.mu.Unlock()
		case errors.Is(err, concurrency.ErrElectionNoLeader):
			n.mu.Lock()
			n.hint = ""
			n.mu.Unlock()
		}
		n.sleep(hintInterval)
	}
}

// Status is the node's view for GET /status.
type Status struct {
	NodeID       string  `json:"node_id"`
	Role         string  `json:"role"`
	FenceToken   *int64  `json:"fence_token"`
	LeaseTTLLeft *uint64 `json:"lease_ttl_remaining_ms"`
}

func (n *Node) Status() Status {
	n.mu.Lock()
	defer n.mu.Unlock()
	st := Status{NodeID: n.cfg.ID, Role: n.role}
	if l := n.lead; l != nil {
		tok := l.token
		left := uint64(l.sess.remaining() / time.Millisecond)
		st.FenceToken, st.LeaseTTLLeft = &tok, &left
	}
	return st
}

// Hint is who this node believes leads, and that node's address if known.
func (n *Node) Hint() (leader, address *string) {
	n.mu.Lock()
	h := n.hint
	n.mu.Unlock()
	if h == "" {
		return nil, nil
	}
	if a, ok := n.cfg.Peers[h]; ok {
		return &h, &a
	}
	return &h, nil
}
