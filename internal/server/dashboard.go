package server

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"time"

	"github.com/wayfinder/wayfinder/web"
)

// dashboardCSP confines the dashboard to its own origin: scripts and styles
// only from its own files (no inline code, no eval), images from the API's
// media or data: URLs (screenshots fetched with an API key), no plugins, no
// forms posting elsewhere, and never inside a frame. Text from pages and
// models is rendered as text, so this is the second line of defence, not
// the first.
const dashboardCSP = "default-src 'self'; img-src 'self' data:; script-src 'self'; style-src 'self'; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// dashboardType is the content type of a dashboard file: fixed for its
// own kinds of file, whatever the system's MIME table says (module scripts
// need a JavaScript type).
func dashboardType(name string) string {
	switch ext := path.Ext(name); ext {
	case ".html":
		return "text/html; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	default:
		return cmp.Or(mime.TypeByExtension(ext), "application/octet-stream")
	}
}

// dashboardFile is one embedded file, read once at start.
type dashboardFile struct {
	data        []byte
	etag        string
	contentType string
}

// mountDashboard serves the embedded dashboard (package web) at /ui/ and
// redirects / to /ui/.
func mountDashboard(mux *http.ServeMux) {
	h, err := newDashboardHandler(web.Files())
	if err != nil {
		// The files are embedded at build time: this is a broken build.
		panic(err)
	}
	mux.Handle("GET /ui/{file...}", h)
	mux.Handle("GET /{$}", http.RedirectHandler("/ui/", http.StatusFound))
}

// newDashboardHandler reads every file of files into memory (the dashboard
// is a few small files) and serves them with the dashboard's security
// headers and an ETag, so browsers revalidate instead of refetching.
func newDashboardHandler(files fs.FS) (http.Handler, error) {
	byName := map[string]dashboardFile{}
	err := fs.WalkDir(files, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(files, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		byName[name] = dashboardFile{data: data, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, contentType: dashboardType(name)}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dashboard files: %w", err)
	}
	if _, ok := byName["index.html"]; !ok {
		return nil, errors.New("dashboard files: no index.html")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", dashboardCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		name := r.PathValue("file")
		if name == "" {
			name = "index.html"
		}
		f, ok := byName[name]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h.Set("Content-Type", f.contentType)
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", f.etag)
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.data))
	}), nil
}
