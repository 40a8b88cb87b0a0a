package auth

import (
	"bufio"
	"crypto/sha1" //nolint:gosec // RFC 6455 defines the handshake with SHA-1
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// wsConn is the server side of a WebSocket connection (RFC 6455), as much
// of it as a CDP relay needs: text and binary messages (fragmented or not),
// ping, pong and close, no extensions. It is written here rather than
// taken from a library because CDP clients are lax in ways the libraries
// refuse: rod sends the Sec-WebSocket-Key "nil", which Chromium accepts.
type wsConn struct {
	conn net.Conn
	r    *bufio.Reader

	wmu    sync.Mutex
	closed bool
}

// WebSocket limits.
const (
	wsMaxMessage   = 16 << 20
	wsWriteTimeout = 10 * time.Second
	wsGUID         = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
)

// errWSClosed: the peer closed the connection.
var errWSClosed = errors.New("websocket closed")

// acceptWS completes the opening handshake of r and takes over its
// connection.
func acceptWS(w http.ResponseWriter, r *http.Request) (*wsConn, error) {
	key := r.Header.Get("Sec-WebSocket-Key")
	if r.Method != http.MethodGet || !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") ||
		!headerHas(r.Header, "Connection", "upgrade") || r.Header.Get("Sec-WebSocket-Version") != "13" || key == "" {
		w.Header().Set("Sec-WebSocket-Version", "13")
		http.Error(w, "a WebSocket (version 13) handshake is required", http.StatusBadRequest)
		return nil, errors.New("not a websocket handshake")
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, fmt.Errorf("websocket: %w", err)
	}
	sum := sha1.Sum([]byte(key + wsGUID)) //nolint:gosec // see above
	resp := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Accept: " + base64.StdEncoding.EncodeToString(sum[:]) + "\r\n\r\n"
	_ = conn.SetWriteDeadline(time.Now().Add(wsWriteTimeout))
	if _, err := conn.Write([]byte(resp)); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("websocket: %w", err)
	}
	_ = conn.SetDeadline(time.Time{})
	return &wsConn{conn: conn, r: brw.Reader}, nil
}

func headerHas(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// read returns the next data message, answering pings on the way. It
// returns errWSClosed when the peer closed the connection.
func (c *wsConn) read() ([]byte, error) {
	var msg []byte
	started := false
	for {
		fin, op, payload, err := c.frame()
		if err != nil {
			return nil, err
		}
		switch op {
		case 0x8: // close
			_ = c.write(0x8, payload[:min(len(payload), 2)])
			return nil, errWSClosed
		case 0x9: // ping
			if err := c.write(0xA, payload); err != nil {
				return nil, err
			}
			continue
		case 0xA: // pong
			continue
		case 0x1, 0x2:
			if started {
				return nil, errors.New("websocket: a new message inside a fragmented one")
			}
			started = true
		case 0x0:
			if !started {
				return nil, errors.New("websocket: a continuation without a message")
			}
		default:
			return nil, fmt.Errorf("websocket: unknown opcode %d", op)
		}
		if len(msg)+len(payload) > wsMaxMessage {
			return nil, errors.New("websocket: message too large")
		}
		msg = append(msg, payload...)
		if fin {
			return msg, nil
		}
	}
}

// frame reads one frame (clients always mask theirs).
func (c *wsConn) frame() (fin bool, op byte, payload []byte, err error) {
	var h [2]byte
	if _, err := io.ReadFull(c.r, h[:]); err != nil {
		return false, 0, nil, err
	}
	fin, op = h[0]&0x80 != 0, h[0]&0x0F
	if h[0]&0x70 != 0 {
		return false, 0, nil, errors.New("websocket: reserved bits set (no extension was agreed)")
	}
	if h[1]&0x80 == 0 {
		return false, 0, nil, errors.New("websocket: an unmasked client frame")
	}
	n := uint64(h[1] & 0x7F)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(c.r, b[:]); err != nil {
			return false, 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(c.r, b[:]); err != nil {
			return false, 0, nil, err
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	if n > wsMaxMessage {
		return false, 0, nil, errors.New("websocket: frame too large")
	}
	var mask [4]byte
	if _, err := io.ReadFull(c.r, mask[:]); err != nil {
		return false, 0, nil, err
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(c.r, payload); err != nil {
		return false, 0, nil, err
	}
	for i := range payload {
		payload[i] ^= mask[i%4]
	}
	return fin, op, payload, nil
}

// writeText sends a text message. Safe for concurrent use.
func (c *wsConn) writeText(p []byte) error { return c.write(0x1, p) }

func (c *wsConn) write(op byte, p []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed {
		return errWSClosed
	}
	hdr := make([]byte, 0, 10)
	hdr = append(hdr, 0x80|op)
	switch n := len(p); {
	case n < 126:
		hdr = append(hdr, byte(n))
	case n <= 0xFFFF:
		hdr = append(hdr, 126)
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	default:
		hdr = append(hdr, 127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	_ = c.conn.SetWriteDeadline(time.Now().Add(wsWriteTimeout))
	bufs := net.Buffers{hdr, p}
	_, err := bufs.WriteTo(c.conn)
	return err
}

// close drops the connection. It sends no close frame: rod's client reads
// every frame as a CDP message (and panics on a close frame), while a
// dropped connection ends every client cleanly.
func (c *wsConn) close() {
	c.wmu.Lock()
	c.closed = true
	c.wmu.Unlock()
	_ = c.conn.Close()
}
