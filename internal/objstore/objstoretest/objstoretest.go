// Package objstoretest runs an in-memory S3 server (gofakes3) on
// 127.0.0.1 for tests, with switches that make it fail like a real store
// does in an outage.
package objstoretest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/wayfinder/wayfinder/internal/objstore"
)

// Test credentials: the fake server does not check signatures.
const (
	AccessKeyID     = "AKIATESTWAYFINDER"
	SecretAccessKey = "test-secret-do-not-log-0123456789"
)

// Server is a fake S3 server holding one bucket.
type Server struct {
	// Endpoint is the server's host:port (plain HTTP).
	Endpoint string
	// Bucket is the bucket that exists.
	Bucket string

	backend  *s3mem.Backend
	http     *httptest.Server
	requests atomic.Int64

	mu       sync.Mutex
	failWith int // HTTP status every request gets; 0: none
	failNext int // requests still to fail with failWith when failWith is 0
	nextCode int
}

// NewServer starts a server with bucket and stops it when the test ends.
func NewServer(t testing.TB, bucket string) *Server {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(bucket); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	fake := gofakes3.New(backend, gofakes3.WithAutoBucket(false))
	s := &Server{Bucket: bucket, backend: backend}
	inner := fake.Server()
	s.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if code := s.failure(); code != 0 {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(code)
			_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>injected failure</Message></Error>`)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(s.http.Close)
	u, err := url.Parse(s.http.URL)
	if err != nil {
		t.Fatalf("parse server URL: %v", err)
	}
	s.Endpoint = u.Host
	return s
}

func (s *Server) failure() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failWith != 0 {
		return s.failWith
	}
	if s.failNext > 0 {
		s.failNext--
		return s.nextCode
	}
	return 0
}

// Config returns a client configuration for the server with quick retries.
func (s *Server) Config() objstore.S3Config {
	return objstore.S3Config{
		Endpoint: s.Endpoint, Bucket: s.Bucket, Region: "us-east-1", PathStyle: true,
		AccessKeyID: AccessKeyID, SecretAccessKey: SecretAccessKey,
	}
}

// FailAll makes every request fail with HTTP status code until Heal.
func (s *Server) FailAll(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failWith = code
}

// FailNext makes the next n requests fail with HTTP status code.
func (s *Server) FailNext(n, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext, s.nextCode = n, code
}

// Heal ends injected failures.
func (s *Server) Heal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failWith, s.failNext = 0, 0
}

// Requests returns how many requests the server has received.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Keys returns the keys in the bucket, sorted.
func (s *Server) Keys(t testing.TB) []string {
	t.Helper()
	list, err := s.backend.ListBucket(s.Bucket, nil, gofakes3.ListBucketPage{})
	if err != nil {
		t.Fatalf("list bucket: %v", err)
	}
	keys := make([]string, 0, len(list.Contents))
	for _, c := range list.Contents {
		keys = append(keys, c.Key)
	}
	sort.Strings(keys)
	return keys
}

// Object returns the bytes and content type stored under key; ok is false
// when there is no such object.
func (s *Server) Object(t testing.TB, key string) (data []byte, contentType string, ok bool) {
	t.Helper()
	obj, err := s.backend.GetObject(s.Bucket, key, nil)
	if err != nil {
		return nil, "", false
	}
	defer func() { _ = obj.Contents.Close() }()
	data, err = io.ReadAll(obj.Contents)
	if err != nil {
		t.Fatalf("read object %s: %v", key, err)
	}
	return data, obj.Metadata["Content-Type"], true
}

// Delete removes the object under key.
func (s *Server) Delete(t testing.TB, key string) {
	t.Helper()
	if _, err := s.backend.DeleteObject(s.Bucket, key); err != nil {
		t.Fatalf("delete %s: %v", key, err)
	}
}
