package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// The write ops, in the JSON shape of Baton's WriteOp (model/src/timeline.rs:
// serde tag "kind", snake_case): {"kind":"claim"}, {"kind":"tick","n":N},
// {"kind":"seq","first":F,"last":L}.
type opClaim struct {
	Kind string `json:"kind"`
}

type opTick struct {
	Kind string `json:"kind"`
	N    uint64 `json:"n"`
}

type opSeq struct {
	Kind  string `json:"kind"`
	First uint64 `json:"first"`
	Last  uint64 `json:"last"`
}

func claimOp() interface{}                 { return opClaim{Kind: "claim"} }
func tickOp(n uint64) interface{}          { return opTick{Kind: "tick", N: n} }
func seqOp(first, last uint64) interface{} { return opSeq{Kind: "seq", First: first, Last: last} }

// fencedWrite is the body of POST resource_url (Baton's FencedWrite).
type fencedWrite struct {
	Node  string      `json:"node"`
	Token int64       `json:"token"`
	Op    interface{} `json:"op"`
}

// writeReply is the resource's answer (Baton's WriteReply, tagged by "outcome").
type writeReply struct {
	Outcome  string  `json:"outcome"`
	LastSeq  *uint64 `json:"last_seq"`
	Cursor   *uint64 `json:"cursor"`
	MaxToken *uint64 `json:"max_token"`
}

type writeKind int

const (
	writeAccepted writeKind = iota
	writeRejected
	writeBehind
	// writeFailed: timed out, refused, an HTTP error or an answer that is not one of the
	// three. The write may or may not have landed.
	writeFailed
)

type writeResult struct {
	kind     writeKind
	lastSeq  uint64
	maxToken uint64
	err      error
}

// ResourceClient sends protected writes, one at a time (the caller's loop is the only
// writer), each bounded by the write timeout.
type ResourceClient struct {
	url     string
	timeout time.Duration
	http    *http.Client
}

func NewResourceClient(url string, timeout time.Duration) *ResourceClient {
	return &ResourceClient{url: url, timeout: timeout, http: &http.Client{}}
}

// Write sends one fenced write and waits for its answer, at most the write timeout.
// When it returns, this node no longer waits on that write; a proxy may still hold the
// request and deliver it later, which only the resource's fence can stop.
func (r *ResourceClient) Write(node string, token int64, op interface{}) writeResult {
	body, err := json.Marshal(fencedWrite{Node: node, Token: token, Op: op})
	if err != nil {
		return writeResult{kind: writeFailed, err: err}
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(body))
	if err != nil {
		return writeResult{kind: writeFailed, err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.http.Do(req)
	if err != nil {
		return writeResult{kind: writeFailed, err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return writeResult{kind: writeFailed, err: err}
	}
	if resp.StatusCode/100 != 2 {
		return writeResult{kind: writeFailed, err: fmt.Errorf("resource answered %s", resp.Status)}
	}
	var rep writeReply
	if err := json.Unmarshal(raw, &rep); err != nil {
		return writeResult{kind: writeFailed, err: fmt.Errorf("resource answer is not JSON: %v", err)}
	}
	switch {
	case rep.Outcome == "accepted" && rep.LastSeq != nil:
		return writeResult{kind: writeAccepted, lastSeq: *rep.LastSeq}
	case rep.Outcome == "rejected" && rep.MaxToken != nil:
		return writeResult{kind: writeRejected, maxToken: *rep.MaxToken}
	case rep.Outcome == "behind" && rep.LastSeq != nil:
		return writeResult{kind: writeBehind, lastSeq: *rep.LastSeq}
	}
	return writeResult{kind: writeFailed, err: fmt.Errorf("unexpected resource answer %s", bytes.TrimSpace(raw))}
}
