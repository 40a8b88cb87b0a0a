package version

import (
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestGetDefaults(t *testing.T) {
	i := Get()
	if i.Version != "dev" || i.Go != runtime.Version() || i.Commit == "" || i.Date != "unknown" {
		t.Fatalf("Get() = %+v", i)
	}
	if s := i.String(); !strings.HasPrefix(s, "wayfinder dev (commit ") {
		t.Fatalf("String() = %q", s)
	}
}

func TestCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector())
	want := `
# HELP wayfinder_build_info Build of the running binary (always 1): version, commit and Go version.
# TYPE wayfinder_build_info gauge
wayfinder_build_info{commit="` + Get().Commit + `",go="` + runtime.Version() + `",version="dev"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "wayfinder_build_info"); err != nil {
		t.Fatal(err)
	}
}
