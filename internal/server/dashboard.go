package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
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
		ct := mime.TypeByExtension(path.Ext(name))
		if ct == "" {
			ct = "application/octet-stream"
		}
		byName[name] = dashboardFile{data: data, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, contentType: ct}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dashboard files: %w", err)
	}
	if _, ok := byName["index.html"]; !ok {
		return nil, fmt.Errorf("dashboard files: no index.html")
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
