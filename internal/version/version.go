// Package version holds the build's version, commit and date, set at link
// time:
//
//	go build -trimpath -ldflags "-X github.com/wayfinder/wayfinder/internal/version.Version=v1.2.3 \
//	  -X github.com/wayfinder/wayfinder/internal/version.Commit=$(git rev-parse HEAD) \
//	  -X github.com/wayfinder/wayfinder/internal/version.Date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
//
// A binary built without them reports "dev" and, for Commit, the VCS
// revision Go stamped into the binary when there is one.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Set by -ldflags -X at link time. They are variables only because -X can
// set nothing else; nothing in the program assigns them.
var (
	// Version is the release version, like v1.2.3. Default "dev".
	Version = "dev"
	// Commit is the source commit the binary was built from.
	Commit = ""
	// Date is the build time (RFC 3339, UTC).
	Date = ""
)

// Info is the build information of the running binary.
type Info struct {
	Version, Commit, Date, Go string
}

// Get returns the build information: the link-time values, with the
// commit filled in from the Go toolchain's VCS stamp when -X left it empty.
func Get() Info {
	i := Info{Version: Version, Commit: Commit, Date: Date, Go: runtime.Version()}
	if i.Commit == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					i.Commit = s.Value
				}
			}
		}
	}
	if i.Commit == "" {
		i.Commit = "unknown"
	}
	if i.Date == "" {
		i.Date = "unknown"
	}
	return i
}

// String is the one-line form `wayfinder version` prints.
func (i Info) String() string {
	return fmt.Sprintf("wayfinder %s (commit %s, built %s, %s)", i.Version, i.Commit, i.Date, i.Go)
}

// NewCollector returns the wayfinder_build_info gauge: always 1, with the
// version, commit and Go version as labels (join it to other series to
// tell which build a replica runs).
func NewCollector() prometheus.Collector {
	i := Get()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "wayfinder_build_info",
		Help: "Build of the running binary (always 1): version, commit and Go version.",
	}, []string{"version", "commit", "go"})
	g.WithLabelValues(i.Version, i.Commit, i.Go).Set(1)
	return g
}
