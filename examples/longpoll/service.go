package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/purgatory-go/purgatory/purgatory"
)

// jobs is the service's state: each job's status and a version that grows
// with every change.
type jobs struct {
	mu   sync.Mutex
	byID map[string]job
}

type job struct {
	Status  string `json:"status"`
	Version int64  `json:"version"`
}

func (j *jobs) get(id string) job {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.byID[id]
}

func (j *jobs) set(id, status string) job {
	j.mu.Lock()
	defer j.mu.Unlock()
	cur := j.byID[id]
	cur.Status, cur.Version = status, cur.Version+1
	j.byID[id] = cur
	return cur
}

// service is the HTTP API: long polls park in polls, keyed by job ID.
type service struct {
	jobs  jobs
	polls *purgatory.Purgatory[string]
	wait  time.Duration // the longest a poll waits
}

func newService(polls *purgatory.Purgatory[string], wait time.Duration) *service {
	return &service{jobs: jobs{byID: map[string]job{}}, polls: polls, wait: wait}
}

func (s *service) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jobs/{id}", s.poll)
	mux.HandleFunc("PUT /jobs/{id}", s.update)
	return mux
}

// poll answers GET /jobs/{id}?after=V: the job as soon as its version is past
// V, or as it is when the wait ends. Over the purgatory's bound it answers
// 503 with Retry-After at once and closes the connection, instead of parking
// one more poll: the overload recipe for HTTP.
func (s *service) poll(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	after, err := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	if err != nil && r.URL.Query().Has("after") {
		http.Error(w, "after: want a version number", http.StatusBadRequest)
		return
	}
	changed := func() bool { return s.jobs.get(id).Version > after }
	switch s.polls.Wait(r.Context(), s.wait, changed, id) {
	case purgatory.Shed:
		// Tell the client when to come back, and let go of its connection
		// (and the server's goroutine for it) meanwhile.
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Connection", "close")
		http.Error(w, "too many waiting polls; retry", http.StatusServiceUnavailable)
		return
	case purgatory.ContextDone:
		return // the client has gone
	}
	// Completed, Expired (no news: the client polls again), Forced or
	// Closed (shutting down): the job as it is now.
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(s.jobs.get(id))
}

// update answers PUT /jobs/{id}?status=S: the new state, after waking the
// polls of the job.
func (s *service) update(w http.ResponseWriter, r *http.Request) {
	id, status := r.PathValue("id"), r.URL.Query().Get("status")
	if status == "" {
		http.Error(w, "status: want a value", http.StatusBadRequest)
		return
	}
	j := s.jobs.set(id, status)
	s.polls.CheckAndComplete(id)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(j)
}

func (j job) String() string { return fmt.Sprintf("%s (v%d)", j.Status, j.Version) }
