package main

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

func writeJSON(w http.ResponseWriter, status int, v interface{}) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// notLeaderBody is the 409 answer: who this node last saw leading, and where.
type notLeaderBody struct {
	Leader  *string `json:"leader"`
	Address *string `json:"address"`
}

func (n *Node) notLeader(w http.ResponseWriter) {
	leader, address := n.Hint()
	writeJSON(w, http.StatusConflict, notLeaderBody{Leader: leader, Address: address})
}

func onlyMethod(method string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method {
			w.Header().Set("Allow", method)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h(w, r)
	}
}

// Handler serves the node's HTTP interface:
//
//	GET  /status          -> {"node_id","role","fence_token","lease_ttl_remaining_ms"}
//	POST /next?count=N    -> 200 {"token","seq","last"} on the leader; 409 {"leader","address"}
//	                         elsewhere; 503 if the write timed out
//	GET  /metrics         -> Prometheus text
//	POST /resign          -> 200 once a leader has stopped acting and handed over; 409 if not leading
func (n *Node) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/status", onlyMethod(http.MethodGet, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, n.Status())
	}))
	mux.HandleFunc("/next", onlyMethod(http.MethodPost, n.handleNext))
	mux.HandleFunc("/metrics", onlyMethod(http.MethodGet, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(n.m.Render()))
	}))
	mux.HandleFunc("/resign", onlyMethod(http.MethodPost, n.handleResign))
	return mux
}

// nextBody is the leader's answer to POST /next: numbers seq..=last under token.
type nextBody struct {
	Token int64  `json:"token"`
	Seq   uint64 `json:"seq"`
	Last  uint64 `json:"last"`
}

func (n *Node) handleNext(w http.ResponseWriter, r *http.Request) {
	count := uint64(1)
	if c := r.URL.Query().Get("count"); c != "" {
		v, err := strconv.ParseUint(c, 10, 32)
		if err != nil {
			http.Error(w, "count must be a positive integer", http.StatusBadRequest)
			return
		}
		if v > 1 {
			count = v
		}
	}
	q := n.Submit(count)
	if q == nil {
		n.notLeader(w)
		return
	}
	select {
	case rep := <-q.reply:
		switch rep.status {
		case http.StatusOK:
			writeJSON(w, http.StatusOK, nextBody{Token: rep.token, Seq: rep.first, Last: rep.last})
		case http.StatusServiceUnavailable:
			http.Error(w, "write timed out", http.StatusServiceUnavailable)
		default:
			n.notLeader(w)
		}
	case <-r.Context().Done():
	}
}

func (n *Node) handleResign(w http.ResponseWriter, r *http.Request) {
	l := n.Resign()
	if l == nil {
		n.notLeader(w)
		return
	}
	// Answer once it has stopped writing (at most a write in flight and its
	// VerifyLeader), within Baton's 1 s; the leadership transfer follows.
	limit := 800 * time.Millisecond
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-l.stopped:
		writeJSON(w, http.StatusOK, map[string]interface{}{"resigned": true, "token": l.token})
	case <-t.C:
		writeJSON(w, http.StatusAccepted, map[string]interface{}{"resigned": false, "token": l.token, "note": "step-down asked, not finished yet"})
	case <-r.Context().Done():
	}
}
