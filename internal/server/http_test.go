package server

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A REST stream whose client stops reading fails its writes once the
// connection's buffers are full, so its handler ends instead of blocking
// for as long as the connection lives.
func TestStallLimitedEndsStalledStream(t *testing.T) {
	t.Parallel()
	ended := make(chan error, 1)
	h := stallLimited(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		chunk := make([]byte, 64<<10)
		for {
			if _, err := w.Write(chunk); err != nil {
				ended <- err
				return
			}
			w.(http.Flusher).Flush()
		}
	}), 200*time.Millisecond)
	srv := httptest.NewServer(h)
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "GET /v1/runs/x/events HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	// Read the status line, then stop reading.
	line, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, "200")
	select {
	case err := <-ended:
		require.Error(t, err)
	case <-time.After(time.Minute):
		t.Fatal("the handler still writes to a client that stopped reading")
	}
}
