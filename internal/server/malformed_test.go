package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/config"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

// rawCodec sends and receives gRPC messages as the bytes given, so a test
// can put garbage on the wire.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// malformedREST is one generated REST request.
type malformedREST struct {
	method, path, contentType string
	body                      []byte
	chunked                   bool // sent without Content-Length
}

// restRoutes are the REST API's routes (from its OpenAPI document), with
// {params} to fill in. The streams (events, live, watch) are left out:
// a well-formed request to one stays open.
func restRoutes(t *testing.T, base string) [][2]string {
	t.Helper()
	resp, err := http.Get(base + "/openapi.json")
	require.NoError(t, err)
	defer resp.Body.Close()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
	var routes [][2]string
	for path, ops := range doc.Paths {
		if strings.HasSuffix(path, "/events") || strings.HasSuffix(path, "/live") || strings.HasSuffix(path, ":watch") {
			continue
		}
		for m := range ops {
			if m := strings.ToUpper(m); m == "GET" || m == "POST" || m == "PUT" || m == "PATCH" || m == "DELETE" {
				routes = append(routes, [2]string{m, path})
			}
		}
	}
	require.NotEmpty(t, routes)
	return routes
}

// genREST generates a malformed REST request: random bytes, wrong content
// types, invalid UTF-8, deep nesting, bad enums and field types, huge
// bodies, bad IDs and unknown paths and methods.
func genREST(r *rand.Rand, routes [][2]string) malformedREST {
	route := routes[r.IntN(len(routes))]
	path := route[1]
	for strings.Contains(path, "{") {
		i, j := strings.Index(path, "{"), strings.Index(path, "}")
		ids := []string{"6f1f0c4e-4a7f-4a55-8c55-5d3c1b3f0a11", "nope", "%ff%fe", "..%2F..%2Fetc", strings.Repeat("a", 3000), "%e2%80%ae", "{x}",
			"%00", "acme%00", "urn:uuid:6f1f0c4e-4a7f-4a55-8c55-5d3c1b3f0a11"}
		path = path[:i] + ids[r.IntN(len(ids))] + path[j+1:]
	}
	req := malformedREST{method: route[0], path: path, contentType: "application/json"}
	randBytes := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return b
	}
	switch r.IntN(10) {
	case 0: // random bytes
		req.body = randBytes(r.IntN(2048))
	case 1: // wrong content type
		req.contentType = []string{"text/plain", "application/xml", "multipart/form-data; boundary=x", "application/x-www-form-urlencoded", "", "application/json; charset=latin1"}[r.IntN(6)]
		req.body = []byte(`goal=x&start_url=https://example.com`)
	case 2: // invalid UTF-8 in strings and keys
		req.body = []byte("{\"goal\":\"\xff\xfe\xc0\",\"start_url\":\"https://example.com/\xed\xa0\x80\",\"name\":\"\xc3\"}")
		if r.IntN(2) == 0 {
			req.body = []byte("{\"\xff\":1}")
		}
	case 3: // deep nesting
		depth := 10000
		open, closing := strings.Repeat(`{"goal":`, depth), strings.Repeat("}", depth)
		if r.IntN(2) == 0 {
			open, closing = strings.Repeat("[", depth), strings.Repeat("]", depth)
		}
		req.body = []byte(open + `"x"` + closing)
	case 4: // bad enums and field types
		req.body = []byte([]string{
			`{"goal":"x","start_url":"https://example.com","judge":{"strategy":"JUDGE_STRATEGY_BOGUS"}}`,
			`{"goal":"x","start_url":"https://example.com","replay":{"mode":99}}`,
			`{"goal":5,"start_url":["https://example.com"]}`,
			`{"max_steps":"many","labels":[1,2]}`,
			`{"goal":"x","start_url":"https://example.com","browser":{"run_timeout":"forever"}}`,
			`{"goal":null,"start_url":1e999}`,
			// NUL characters, which Postgres stores in no text or JSON.
			`{"goal":"x\u0000y","start_url":"https://example.com","labels":{"a\u0000":"b"}}`,
			`{"name":"n\u0000","display_name":"\u0000","tenant_id":"acme\u0000"}`,
		}[r.IntN(8)])
		if r.IntN(3) == 0 {
			req.method, req.path, req.body = "GET", "/v1/runs?statuses=RUN_STATUS_BOGUS&page_size=-1", nil
		}
	case 5: // a huge body (over the 4 MiB limit): 413
		req.body = bytes.Repeat([]byte(" "), 5<<20)
		req.chunked = r.IntN(2) == 0
	case 6: // unknown paths and methods
		req.path = []string{"/v1/bogus", "/v2/runs", "/v1/runs/x/y/z/w", "/v1//runs", "/v1/runs:explode", "/v1/%zz", "/v1/" + strings.Repeat("x/", 500)}[r.IntN(7)]
		req.method = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "BREW"}[r.IntN(8)]
	case 7: // a valid route with the wrong method (and an empty or truncated body)
		for req.method == route[0] {
			req.method = []string{"PUT", "PATCH", "DELETE", "OPTIONS"}[r.IntN(4)]
		}
		// Truncated JSON: another route may serve this path with the
		// method chosen (GET and PUT of one site profile), and an empty
		// body would then be a valid empty message, not a malformed one.
		req.body = []byte(`{`)
	case 8: // truncated or trailing JSON
		b := []byte(`{"goal":"x","start_url":"https://example.com","max_steps":3}`)
		if r.IntN(2) == 0 {
			// At least "{": an empty body is a valid empty message (a
			// site profile with nothing set, say), not a malformed one.
			req.body = b[:1+r.IntN(len(b)-1)]
		} else {
			req.body = append(b, []byte(`}{"x":1}`)...)
		}
	default: // random query strings
		req.method = "GET"
		req.path += "?" + string(randBytes(r.IntN(64)))
		req.path = strings.Map(func(c rune) rune {
			if c < 0x21 || c > 0x7e || c == '#' {
				return 'a'
			}
			return c
		}, req.path)
	}
	return req
}

// tableCounts counts the rows of every table of the public schema.
func tableCounts(t *testing.T, ctx context.Context, dbURL string) map[string]int64 {
	t.Helper()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`)
	require.NoError(t, err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	counts := map[string]int64{}
	for _, tbl := range tables {
		var n int64
		require.NoError(t, conn.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %q`, tbl)).Scan(&n))
		counts[tbl] = n
	}
	require.Contains(t, counts, "runs")
	return counts
}

// TestMalformedRequests sends a bounded burst of malformed REST and gRPC
// requests to one API server. None gets a 5xx, nothing panics, the server
// keeps answering, and no table gains or loses a row.
//
// 501 (UNIMPLEMENTED) is allowed only when it names a params field: it is
// how fields of later releases (params.headless=false) are refused, by
// design, and a body may set one. A wrong method on a known path is 405. Over gRPC, INTERNAL is allowed only from grpc-go's own decoding:
// grpc-go decodes a request before any
// interceptor runs and hardcodes that code (message "grpc: failed to
// unmarshal the received message") for bytes that are not the method's
// message; no Wayfinder code has run.
func TestMalformedRequests(t *testing.T) {
	t.Parallel()
	dbURL := storetest.NewDB(t)
	var logs syncBuffer
	ts := startServer(t, dbURL, serverOpts{role: config.RoleAPI, logs: &logs})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := "http://" + ts.addrs.HTTP
	routes := restRoutes(t, base)
	before := tableCounts(t, ctx, dbURL)

	const restN, grpcN, workers = 2000, 1000, 8
	r := rand.New(rand.NewPCG(9, 9))
	reqs := make([]malformedREST, restN)
	for i := range reqs {
		reqs[i] = genREST(r, routes)
	}
	client := &http.Client{Timeout: 20 * time.Second}
	var mu sync.Mutex
	var failures []string
	statuses := map[int]int{}
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 40 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	var wg sync.WaitGroup
	next := make(chan malformedREST)
	for range workers {
		wg.Go(func() {
			for req := range next {
				var body io.Reader = bytes.NewReader(req.body)
				if req.chunked {
					body = io.MultiReader(body) // hides the length: sent chunked
				}
				hr, err := http.NewRequestWithContext(ctx, req.method, base+req.path, body)
				if err != nil {
					continue // not a request net/http can send
				}
				if req.contentType != "" {
					hr.Header.Set("Content-Type", req.contentType)
				}
				resp, err := client.Do(hr)
				if err != nil {
					if len(req.body) > 4<<20 {
						continue // the server answered 413 and closed while the body was still being sent
					}
					fail("%s %.80s: %v", req.method, req.path, err)
					continue
				}
				raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
				resp.Body.Close()
				mu.Lock()
				statuses[resp.StatusCode]++
				mu.Unlock()
				switch {
				case len(req.body) > 4<<20 && resp.StatusCode != http.StatusRequestEntityTooLarge:
					fail("%s %.80s with %d bytes: %d, want 413: %.200s", req.method, req.path, len(req.body), resp.StatusCode, raw)
				case resp.StatusCode == http.StatusNotImplemented && bytes.Contains(raw, []byte(`"code":12`)) && bytes.Contains(raw, []byte(`params.`)):
				case resp.StatusCode >= 500:
					fail("%s %.80s (%s, %.60q): %d %.300s", req.method, req.path, req.contentType, req.body, resp.StatusCode, raw)
				}
			}
		})
	}
	for _, req := range reqs {
		next <- req
	}
	close(next)
	wg.Wait()

	// gRPC: garbage and oversize messages to every method of the API.
	var methods []protoreflect.MethodDescriptor
	protoregistry.GlobalFiles.RangeFilesByPackage("wayfinder.v1", func(fd protoreflect.FileDescriptor) bool {
		for i := range fd.Services().Len() {
			ms := fd.Services().Get(i).Methods()
			for j := range ms.Len() {
				methods = append(methods, ms.Get(j))
			}
		}
		return true
	})
	require.NotEmpty(t, methods)
	grpcCodes := map[codes.Code]int{}
	nextCall := make(chan [2]any)
	for range workers {
		wg.Go(func() {
			for c := range nextCall {
				m, msg := c[0].(protoreflect.MethodDescriptor), c[1].([]byte)
				name := fmt.Sprintf("/%s/%s", m.Parent().FullName(), m.Name())
				cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
				var err error
				if m.IsStreamingServer() || m.IsStreamingClient() {
					var s grpc.ClientStream
					s, err = ts.conn.NewStream(cctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: m.IsStreamingClient()}, name, grpc.ForceCodec(rawCodec{}))
					if err == nil {
						if err = s.SendMsg(&msg); err == nil {
							_ = s.CloseSend()
							var out []byte
							err = s.RecvMsg(&out)
						}
					}
				} else {
					var out []byte
					err = ts.conn.Invoke(cctx, name, &msg, &out, grpc.ForceCodec(rawCodec{}))
				}
				ccancel()
				st := status.Convert(err)
				mu.Lock()
				grpcCodes[st.Code()]++
				mu.Unlock()
				switch st.Code() {
				case codes.Internal:
					if !strings.HasPrefix(st.Message(), "grpc: failed to unmarshal the received message") {
						fail("%s: %v", name, err)
					}
				case codes.Unknown, codes.DataLoss, codes.Unavailable:
					fail("%s: %v", name, err)
				case codes.DeadlineExceeded:
					if !m.IsStreamingServer() {
						fail("%s: no answer: %v", name, err)
					}
				}
			}
		})
	}
	for i := range grpcN {
		m := methods[r.IntN(len(methods))]
		var msg []byte
		switch i % 4 {
		case 0: // random bytes
			msg = make([]byte, r.IntN(512))
			for k := range msg {
				msg[k] = byte(r.IntN(256))
			}
		case 1: // a field 1 string with invalid UTF-8
			msg = []byte{0x0a, 0x03, 0xff, 0xfe, 0xc0}
		case 2: // a length prefix past the end
			msg = []byte{0x0a, 0xff, 0xff, 0xff, 0x7f, 'x'}
		default: // oversize: over the 4 MiB receive limit
			if i%40 == 3 {
				msg = append([]byte{0x0a, 0x80, 0x80, 0x80, 0x03}, bytes.Repeat([]byte("x"), 6<<20)...)
			}
		}
		nextCall <- [2]any{m, msg}
	}
	close(nextCall)
	wg.Wait()
	t.Logf("REST statuses: %v; gRPC codes: %v", statuses, grpcCodes)
	require.Empty(t, failures, strings.Join(failures, "\n"))
	require.Positive(t, statuses[http.StatusRequestEntityTooLarge])

	// The server is up and answers well-formed requests.
	require.Equal(t, http.StatusOK, restJSON(t, http.MethodGet, base+"/healthz", "", nil))
	_, err := ts.client.ListRuns(ctx, &wfv1.ListRunsRequest{})
	require.NoError(t, err)
	require.NotContains(t, logs.String(), "panic")
	require.Equal(t, before, tableCounts(t, ctx, dbURL), "malformed requests wrote nothing")
}
