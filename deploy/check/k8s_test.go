package check

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	k8sDir      = "../k8s"
	adapterFile = "../prometheus-adapter/rules.yaml"
	// collectorFile defines the metric the worker HPA scales on.
	collectorFile = "../../internal/store/collector.go"
)

// exportedMetrics are the metric names the adapter rule may build on,
// each checked to be defined in the server's source.
func exportedMetrics(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile(collectorFile)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range []string{"wayfinder_queue_jobs"} {
		if strings.Contains(string(src), `"`+n+`"`) {
			out = append(out, n)
		}
	}
	return out
}

// checkK8s runs every check on the manifests in dir and the adapter rules.
func checkK8s(t *testing.T, dir, adapter string) error {
	t.Helper()
	objs, err := LoadManifests(dir)
	if err != nil {
		return err
	}
	if errs := CheckSchema(objs); len(errs) > 0 {
		return errors.Join(errs...)
	}
	m, err := Typed(objs)
	if err != nil {
		return err
	}
	errs := CheckSemantics(m)
	ac, err := LoadAdapterConfig(adapter)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	errs = append(errs, CheckAdapter(ac, m, exportedMetrics(t))...)
	return errors.Join(errs...)
}

func TestK8sManifests(t *testing.T) {
	if err := checkK8s(t, k8sDir, adapterFile); err != nil {
		t.Fatal(err)
	}
}

// brokenCopy copies dir and the adapter file into a temporary directory,
// replacing old with new in file (which must contain old).
func brokenCopy(t *testing.T, file, old, new string) (dir, adapter string) {
	t.Helper()
	tmp := t.TempDir()
	dir = filepath.Join(tmp, "k8s")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := filepath.Glob(filepath.Join(k8sDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	copyFile := func(src, dst string) {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(src) == file {
			if !strings.Contains(string(b), old) {
				t.Fatalf("%s does not contain %q: the broken copy would be the original", file, old)
			}
			b = []byte(strings.Replace(string(b), old, new, 1))
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range entries {
		copyFile(f, filepath.Join(dir, filepath.Base(f)))
	}
	adapter = filepath.Join(tmp, "rules.yaml")
	copyFile(adapterFile, adapter)
	return dir, adapter
}

func TestK8sChecksCatchBrokenManifests(t *testing.T) {
	for _, tc := range []struct {
		name, file, old, new, want string
	}{
		{"unknown field", "worker.yaml", "          args: [\"serve\"]", "          args: [\"serve\"]\n          bogus: 1", "field not declared in schema"},
		{"wrong type", "api.yaml", "  replicas: 2", "  replicas: two", "expected numeric"},
		{"unknown kind", "config.yaml", "kind: ConfigMap", "kind: ConfigMapp", "schema"},
		{"selector mismatch", "worker.yaml", "  selector:\n    matchLabels:\n      app.kubernetes.io/name: wayfinder\n      app.kubernetes.io/component: worker",
			"  selector:\n    matchLabels:\n      app.kubernetes.io/name: wayfinder\n      app.kubernetes.io/component: wrk", "selector does not match"},
		{"probe port missing", "worker.yaml", "            httpGet:\n              path: /readyz\n              port: http",
			"            httpGet:\n              path: /readyz\n              port: metrics", "readinessProbe port metrics"},
		{"liveness on readyz", "api.yaml", "          livenessProbe:\n            httpGet:\n              path: /healthz",
			"          livenessProbe:\n            httpGet:\n              path: /readyz", "livenessProbe GETs /readyz"},
		{"no memory limit", "worker.yaml", "            limits:\n              memory: 2560Mi", "            limits: {}", "limits.memory"},
		{"request above limit", "api.yaml", "              memory: 256Mi", "              memory: 1Gi", "above its limit"},
		{"root", "api.yaml", "        runAsUser: 10001", "        runAsUser: 0", "non-zero runAsUser"},
		{"privilege escalation", "worker.yaml", "allowPrivilegeEscalation: false", "allowPrivilegeEscalation: true", "allowPrivilegeEscalation"},
		{"missing secret key", "secret.yaml", "  WAYFINDER_ENCRYPTION_KEYS:", "  WAYFINDER_ENCRYPTION_KEY:", "key WAYFINDER_ENCRYPTION_KEYS of Secret wayfinder"},
		{"missing configmap", "config.yaml", "  name: wayfinder\n", "  name: wayfinder-config\n", "envFrom ConfigMap wayfinder does not exist"},
		{"no admin key", "worker.yaml", "            - name: WAYFINDER_ADMIN_KEY", "            - name: WAYFINDER_ADMIN_KEY_UNUSED", "env WAYFINDER_ADMIN_KEY is not set"},
		{"grace below drain", "worker.yaml", "terminationGracePeriodSeconds: 75", "terminationGracePeriodSeconds: 40", "terminationGracePeriodSeconds 40s"},
		{"longer shutdown timeout", "config.yaml", `WAYFINDER_SHUTDOWN_TIMEOUT: "30s"`, `WAYFINDER_SHUTDOWN_TIMEOUT: "2m"`, "terminationGracePeriodSeconds"},
		{"preStop not counted", "api.yaml", `command: ["sleep", "5"]`, `command: ["sleep", "30"]`, "preStop 30s"},
		{"pdb targets nothing", "worker.yaml", "  maxUnavailable: 1\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: wayfinder\n      app.kubernetes.io/component: worker",
			"  maxUnavailable: 1\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: wayfinder\n      app.kubernetes.io/component: nobody", "PodDisruptionBudget wayfinder-worker: selector matches no"},
		{"hpa targets nothing", "worker.yaml", "    name: wayfinder-worker\n  minReplicas", "    name: wayfinder-wrk\n  minReplicas", "scaleTargetRef apps/v1 Deployment/wayfinder-wrk"},
		{"service port", "api.yaml", "      targetPort: grpc", "      targetPort: grcp", "targetPort grcp"},
		{"service selects nothing", "api.yaml", "spec:\n  selector:\n    app.kubernetes.io/name: wayfinder\n    app.kubernetes.io/component: api",
			"spec:\n  selector:\n    app.kubernetes.io/name: wayfinder\n    app.kubernetes.io/component: web", "Service wayfinder: selector"},
		{"role", "worker.yaml", "              value: worker", "              value: workers", "WAYFINDER_ROLE"},
		{"hpa metric without rule", "worker.yaml", "          name: wayfinder_queue_load", "          name: wayfinder_queue_depth", "wayfinder_queue_depth has no prometheus-adapter rule"},
		{"volume missing", "worker.yaml", "        - name: tmp\n          emptyDir:\n            sizeLimit: 512Mi", "        - name: scratch\n          emptyDir:\n            sizeLimit: 512Mi", "volumeMount tmp names no volume"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, adapter := brokenCopy(t, tc.file, tc.old, tc.new)
			err := checkK8s(t, dir, adapter)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("check = %v\nwant an error containing %q", err, tc.want)
			}
		})
	}
}

func TestAdapterChecksCatchBrokenRules(t *testing.T) {
	for _, tc := range []struct{ name, old, new, want string }{
		{"unknown key", "    metricsQuery:", "    metricQuery:", "unknown field"},
		{"no label matchers", `,<<.LabelMatchers>>}`, `}`, "lacks <<.LabelMatchers>>"},
		{"metric not exported", `seriesQuery: 'wayfinder_queue_jobs{`, `seriesQuery: 'wayfinder_queue_job{`, "a metric the server exports"},
		{"renamed", `as: "wayfinder_queue_load"`, `as: "wayfinder_load"`, "has no prometheus-adapter rule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := os.ReadFile(adapterFile)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tc.old) {
				t.Fatalf("%s does not contain %q", adapterFile, tc.old)
			}
			p := filepath.Join(t.TempDir(), "rules.yaml")
			if err := os.WriteFile(p, []byte(strings.Replace(string(b), tc.old, tc.new, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			err = checkK8s(t, k8sDir, p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("check = %v\nwant an error containing %q", err, tc.want)
			}
		})
	}
}
