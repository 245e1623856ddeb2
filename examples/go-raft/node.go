package main

import (
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// How long a node that resigned waits before it acts on its own leadership again: a
// transfer that found no successor leaves it leading.
const rejoinAfterResign = time.Second

// How often the leadership watcher reads raft.State() besides LeaderCh: LeaderCh drops
// a change nobody was receiving at that instant (api.go: "does not block on writes").
const stateEvery = 10 * time.Millisecond

// Why a leadership ended.
const (
	reasonLost     = "leadership_lost" // raft.State() is no longer Leader, or VerifyLeader failed
	reasonFenced   = "fenced"          // the resource rejected a write: a newer token exists
	reasonResigned = "resigned"        // POST /resign
	reasonShutdown = "shutdown"        // SIGTERM or SIGINT
)

// leadership is one term of this node as leader, from its claim entry's commit until its
// writes have stopped.
type leadership struct {
	token   int64 // the Raft term of its claim entry
	resign  atomic.Bool
	wake    chan struct{} // cap 1: a resign was asked, or raft said leadership changed
	stopped chan struct{} // closed once it has stopped acting
	ended   chan struct{} // closed once it has also handed over, if asked

	mu       sync.Mutex
	deadline time.Time // the start of the last VerifyLeader that succeeded + LeaderLease
}

func (l *leadership) remaining() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d := time.Until(l.deadline); d > 0 {
		return d
	}
	return 0
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

// Node is the Raft server's user: it acts as leader while Raft says it leads.
type Node struct {
	cfg      *Config
	r        *raft.Raft
	fsm      *claimFSM
	res      *ResourceClient
	m        *Metrics
	shutdown chan struct{}
	queued   chan struct{} // cap 1: a /next request is waiting
	changed  chan struct{} // cap 1: raft's leadership changed

	mu        sync.Mutex
	lead      *leadership // while it acts as leader
	accepting bool        // whether /next requests are queued (after the claim)
	queue     []*nextReq
}

func NewNode(cfg *Config, r *raft.Raft, fsm *claimFSM) *Node {
	return &Node{
		cfg:      cfg,
		r:        r,
		fsm:      fsm,
		res:      NewResourceClient(cfg.ResourceURL, cfg.WriteTimeout),
		m:        NewMetrics(cfg.ID),
		shutdown: make(chan struct{}),
		queued:   make(chan struct{}, 1),
		changed:  make(chan struct{}, 1),
	}
}

func (n *Node) logf(format string, args ...interface{}) {
	logf(n.cfg.ID, format, args...)
}

func (n *Node) shuttingDown() bool {
	select {
	case <-n.shutdown:
		return true
	default:
		return false
	}
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
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

func (n *Node) leads() bool {
	return n.r.State() == raft.Leader
}

// watch turns LeaderCh, and raft.State() read every stateEvery, into wake-ups of the
// leader's loop and of Run.
func (n *Node) watch() {
	t := time.NewTicker(stateEvery)
	defer t.Stop()
	was := false
	for !n.shuttingDown() {
		select {
		case <-n.r.LeaderCh():
		case <-t.C:
		case <-n.shutdown:
			return
		}
		if now := n.leads(); now != was {
			was = now
			notify(n.changed)
			n.mu.Lock()
			if l := n.lead; l != nil {
				notify(l.wake)
			}
			n.mu.Unlock()
		}
	}
}

// Run acts on each leadership Raft gives this node, until shutdown: claim it in the log
// (its term is the token), act as leader until Raft takes it away, a write is fenced or
// a resign is asked, then stop every write; after a resign, hand leadership over.
func (n *Node) Run() {
	go n.watch()
	for !n.shuttingDown() {
		if !n.leads() {
			select {
			case <-n.changed:
			case <-time.After(stateEvery):
			case <-n.shutdown:
			}
			continue
		}
		token, err := n.claim()
		if err != nil {
			n.logf("claim not committed: %v", err)
			n.sleep(stateEvery)
			continue
		}
		if reason := n.serve(token); reason == reasonResigned {
			n.sleep(rejoinAfterResign)
		}
	}
}

// claim appends this leadership's claim entry and waits for it to commit and apply (a
// barrier too: every earlier entry is applied); its term is the token.
func (n *Node) claim() (int64, error) {
	data, _ := json.Marshal(claimEntry{Node: n.cfg.ID})
	f := n.r.Apply(data, n.cfg.WriteTimeout)
	if err := f.Error(); err != nil {
		return 0, err
	}
	switch v := f.Response().(type) {
	case uint64:
		return int64(v), nil
	case error:
		return 0, v
	}
	return 0, errors.New("the FSM answered no term")
}

// serve is one leadership: act as leader until it must stop, and only then let go.
func (n *Node) serve(token int64) string {
	l := &leadership{token: token, wake: make(chan struct{}, 1), stopped: make(chan struct{}), ended: make(chan struct{})}
	n.mu.Lock()
	n.lead = l
	n.mu.Unlock()
	n.m.update(func(m *Metrics) {
		m.leadersActing = 1
		m.fenceToken = l.token
		m.transitions++
	})
	n.logf("leader: term %d", l.token)

	reason := n.act(l)

	// act() is the only writer and has returned: no write of this leadership is still
	// awaited. Only now does the node let leadership go.
	n.mu.Lock()
	n.accepting = false
	queue := n.queue
	n.queue = nil
	n.lead = nil
	n.mu.Unlock()
	for _, q := range queue {
		q.reply <- nextReply{status: 409}
	}
	n.m.update(func(m *Metrics) {
		m.leadersActing = 0
		m.fenceToken = 0
		m.transitions++
	})
	n.logf("stopped acting: term %d, %s", l.token, reason)
	close(l.stopped)
	if reason == reasonResigned && n.leads() {
		if err := n.r.LeadershipTransfer().Error(); err != nil {
			n.logf("leadership transfer: %v", err)
		}
	}
	close(l.ended)
	return reason
}

// stopReason says whether the leadership must end, and why ("" if not).
func (n *Node) stopReason(l *leadership) string {
	if n.shuttingDown() {
		return reasonShutdown
	}
	if l.resign.Load() {
		return reasonResigned
	}
	if !n.leads() {
		return reasonLost
	}
	return ""
}

// verify is the leader's check before each protected write, as hashicorp/raft documents
// it for a leader that must not act on stale leadership: VerifyLeader() (a round of
// heartbeats a quorum must answer). Leadership's own LeaderLeaseTimeout is not a lease
// (hashicorp/raft#108): it only makes a leader cut off from a quorum step down. So the
// write must also leave within LeaderLease of the verify's start, and the verify itself
// may take no longer. Returns whether the write may go.
func (n *Node) verify(l *leadership) bool {
	start := time.Now()
	f := n.r.VerifyLeader()
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	t := time.NewTimer(n.cfg.LeaderLease)
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil {
			return false
		}
	case <-t.C:
		return false
	case <-n.shutdown:
		return false
	}
	deadline := start.Add(n.cfg.LeaderLease)
	l.mu.Lock()
	l.deadline = deadline
	l.mu.Unlock()
	return time.Now().Before(deadline)
}

// act is the leader's work, every write one at a time: claim at the resource (announce
// the token, learn the sequence's last number), then a tick write every tick and a seq
// write for each batch of queued /next requests. Returns why it stopped.
func (n *Node) act(l *leadership) string {
	p := &pacer{first: 25 * time.Millisecond, max: n.cfg.WriteTimeout}
	var lastSeq uint64
	for {
		if r := n.stopReason(l); r != "" {
			return r
		}
		res, ok := n.write(l, claimOp(), p)
		if !ok {
			continue
		}
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
			res, _ := n.write(l, tickOp(tickN), p)
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
			res, sent := n.write(l, seqOp(first, last), p)
			if sent {
				// Numbers of a write that may have landed are never reused: gaps are
				// allowed, handing a number out twice is not.
				lastSeq = last
				if res.kind != writeRejected && res.lastSeq > lastSeq {
					lastSeq = res.lastSeq
				}
			}
			next := first
			for _, q := range batch {
				switch {
				case sent && res.kind == writeAccepted:
					q.reply <- nextReply{status: 200, token: l.token, first: next, last: next + q.count - 1}
					next += q.count
				case sent && res.kind == writeRejected, !sent:
					q.reply <- nextReply{status: 409}
				default:
					q.reply <- nextReply{status: 503}
				}
			}
			if sent && res.kind == writeRejected {
				return reasonFenced
			}
			continue
		}
		t := time.NewTimer(time.Until(nextTick))
		select {
		case <-n.shutdown:
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

// write is one protected write, sent only once VerifyLeader passed (see verify), with its
// metrics; a failed one is paced. The bool says whether it was sent.
func (n *Node) write(l *leadership, op interface{}, p *pacer) (writeResult, bool) {
	if !n.verify(l) {
		n.m.update(func(m *Metrics) { m.verifyFailures++ })
		return writeResult{kind: writeFailed}, false
	}
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
			case <-l.wake:
			}
			t.Stop()
		}
	}
	return res, true
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
	notify(n.queued)
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
	notify(l.wake)
	return l
}

// Status is the node's view for GET /status.
type Status struct {
	NodeID       string  `json:"node_id"`
	Role         string  `json:"role"`
	FenceToken   *int64  `json:"fence_token"`
	LeaseTTLLeft *uint64 `json:"lease_ttl_remaining_ms"`
}

// Status says "leader" while the node acts on a claimed leadership and Raft still says
// it leads; "candidate" while Raft campaigns, or leads before the claim committed.
func (n *Node) Status() Status {
	state := n.r.State()
	n.mu.Lock()
	defer n.mu.Unlock()
	st := Status{NodeID: n.cfg.ID, Role: "follower"}
	switch {
	case n.lead != nil && state == raft.Leader:
		tok := n.lead.token
		left := uint64(n.lead.remaining() / time.Millisecond)
		st.Role, st.FenceToken, st.LeaseTTLLeft = "leader", &tok, &left
	case state == raft.Candidate, state == raft.Leader:
		st.Role = "candidate"
	}
	return st
}

// Hint is who this node believes leads (the node of the latest claim its FSM applied),
// and that node's address if known.
func (n *Node) Hint() (leader, address *string) {
	h, _ := n.fsm.latest()
	if h == "" || h == n.cfg.ID {
		return nil, nil
	}
	if a, ok := n.cfg.Peers[h]; ok {
		return &h, &a
	}
	return &h, nil
}
