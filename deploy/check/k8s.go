package check

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// Drain bounds of the server (internal/server Run, internal/queue Stop):
// after WAYFINDER_SHUTDOWN_TIMEOUT, River stops and cancels its jobs for at
// most queueStop, then the HTTP servers get httpStop.
const (
	queueStop = 15 * time.Second
	httpStop  = 5 * time.Second
)

// Object is one manifest document: where it came from and its content.
type Object struct {
	Source string
	U      *unstructured.Unstructured
}

// Name is "Kind/name (file)".
func (o Object) Name() string {
	return fmt.Sprintf("%s/%s (%s)", o.U.GetKind(), o.U.GetName(), o.Source)
}

// LoadManifests reads every YAML document of the *.yaml files in dir.
func LoadManifests(dir string) ([]Object, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no *.yaml in %s", dir)
	}
	sort.Strings(files)
	var objs []Object
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		docs, err := SplitYAML(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for i, d := range docs {
			u, err := DecodeObject(d)
			if err != nil {
				return nil, fmt.Errorf("%s document %d: %w", filepath.Base(f), i+1, err)
			}
			objs = append(objs, Object{Source: filepath.Base(f), U: u})
		}
	}
	return objs, nil
}

// SplitYAML splits a multi-document YAML file, dropping empty documents.
func SplitYAML(b []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var docs [][]byte
	for {
		d, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(stripComments(d))) > 0 {
			docs = append(docs, d)
		}
	}
}

func stripComments(b []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '#' {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

// DecodeObject decodes one YAML document into an unstructured object.
func DecodeObject(doc []byte) (*unstructured.Unstructured, error) {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		return nil, err
	}
	return u, nil
}

// typeConverter checks objects against client-go's embedded OpenAPI
// schema, the one server-side apply uses.
var typeConverter managedfields.TypeConverter = applyconfigurations.NewTypeConverter(scheme.Scheme)

// CheckSchema reports every object that does not match its kind's schema
// (unknown fields, wrong types) or whose kind the schema does not know.
func CheckSchema(objs []Object) []error {
	var errs []error
	for _, o := range objs {
		if _, err := typeConverter.ObjectToTyped(o.U); err != nil {
			errs = append(errs, fmt.Errorf("%s: schema: %w", o.Name(), err))
		}
	}
	return errs
}

// Manifests are the typed objects of a manifest set.
type Manifests struct {
	Deployments map[string]*appsv1.Deployment
	Services    map[string]*corev1.Service
	ConfigMaps  map[string]*corev1.ConfigMap
	Secrets     map[string]*corev1.Secret
	PDBs        map[string]*policyv1.PodDisruptionBudget
	HPAs        map[string]*autoscalingv2.HorizontalPodAutoscaler
}

// Typed converts objs into their API types; a kind this set does not use
// is an error.
func Typed(objs []Object) (*Manifests, error) {
	m := &Manifests{
		Deployments: map[string]*appsv1.Deployment{}, Services: map[string]*corev1.Service{},
		ConfigMaps: map[string]*corev1.ConfigMap{}, Secrets: map[string]*corev1.Secret{},
		PDBs: map[string]*policyv1.PodDisruptionBudget{}, HPAs: map[string]*autoscalingv2.HorizontalPodAutoscaler{},
	}
	for _, o := range objs {
		var dst runtime.Object
		name := o.U.GetName()
		switch o.U.GroupVersionKind().String() {
		case "apps/v1, Kind=Deployment":
			d := &appsv1.Deployment{}
			m.Deployments[name], dst = d, d
		case "/v1, Kind=Service":
			s := &corev1.Service{}
			m.Services[name], dst = s, s
		case "/v1, Kind=ConfigMap":
			c := &corev1.ConfigMap{}
			m.ConfigMaps[name], dst = c, c
		case "/v1, Kind=Secret":
			s := &corev1.Secret{}
			m.Secrets[name], dst = s, s
		case "policy/v1, Kind=PodDisruptionBudget":
			p := &policyv1.PodDisruptionBudget{}
			m.PDBs[name], dst = p, p
		case "autoscaling/v2, Kind=HorizontalPodAutoscaler":
			h := &autoscalingv2.HorizontalPodAutoscaler{}
			m.HPAs[name], dst = h, h
		default:
			return nil, fmt.Errorf("%s: kind %s is not expected here", o.Name(), o.U.GroupVersionKind())
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.U.Object, dst, true); err != nil {
			return nil, fmt.Errorf("%s: %w", o.Name(), err)
		}
	}
	return m, nil
}

// CheckSemantics checks what the schema cannot: that the objects fit
// together and the pods are safe, probed, sized and drained.
func CheckSemantics(m *Manifests) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(m.Deployments) == 0 {
		fail("no Deployment")
	}
	for name, d := range sorted(m.Deployments) {
		checkDeployment(m, name, d, fail)
	}
	for name, s := range sorted(m.Services) {
		d := selecting(m, s.Spec.Selector)
		if d == nil {
			fail("Service %s: selector %v matches no Deployment's pods", name, s.Spec.Selector)
			continue
		}
		for _, p := range s.Spec.Ports {
			if p.TargetPort.String() != "" && p.TargetPort.String() != "0" && !hasPort(d.Spec.Template.Spec.Containers, p.TargetPort.String()) {
				fail("Service %s: targetPort %s is not a container port of Deployment %s", name, p.TargetPort.String(), d.Name)
			}
		}
	}
	pdbFor, hpaFor := map[string]bool{}, map[string]bool{}
	for name, p := range sorted(m.PDBs) {
		if p.Spec.Selector == nil {
			fail("PodDisruptionBudget %s: no selector", name)
			continue
		}
		d := selecting(m, p.Spec.Selector.MatchLabels)
		if d == nil || len(p.Spec.Selector.MatchExpressions) > 0 {
			fail("PodDisruptionBudget %s: selector matches no Deployment's pods", name)
			continue
		}
		pdbFor[d.Name] = true
		if p.Spec.MinAvailable == nil && p.Spec.MaxUnavailable == nil {
			fail("PodDisruptionBudget %s: neither minAvailable nor maxUnavailable", name)
		}
	}
	for name, h := range sorted(m.HPAs) {
		ref := h.Spec.ScaleTargetRef
		if ref.Kind != "Deployment" || ref.APIVersion != "apps/v1" || m.Deployments[ref.Name] == nil {
			fail("HorizontalPodAutoscaler %s: scaleTargetRef %s %s/%s is not a Deployment here", name, ref.APIVersion, ref.Kind, ref.Name)
			continue
		}
		hpaFor[ref.Name] = true
		if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 1 || *h.Spec.MinReplicas > h.Spec.MaxReplicas {
			fail("HorizontalPodAutoscaler %s: minReplicas must be set, ≥ 1 and ≤ maxReplicas", name)
		}
		if len(h.Spec.Metrics) == 0 {
			fail("HorizontalPodAutoscaler %s: no metrics", name)
		}
	}
	for name := range sorted(m.Deployments) {
		if !pdbFor[name] {
			fail("Deployment %s: no PodDisruptionBudget", name)
		}
		if !hpaFor[name] {
			fail("Deployment %s: no HorizontalPodAutoscaler", name)
		}
	}
	return errs
}

func checkDeployment(m *Manifests, name string, d *appsv1.Deployment, fail func(string, ...any)) {
	spec := d.Spec.Template.Spec
	if d.Spec.Selector == nil {
		fail("Deployment %s: no selector", name)
	} else if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err != nil || sel.Empty() || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		fail("Deployment %s: selector does not match the pod template's labels", name)
	}
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		fail("Deployment %s: the pod must set runAsNonRoot: true and a non-zero runAsUser", name)
	}
	if len(spec.Containers) != 1 {
		fail("Deployment %s: want one container, have %d", name, len(spec.Containers))
		return
	}
	c := spec.Containers[0]
	if sc := c.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !contains(sc.Capabilities.Drop, "ALL") || (sc.RunAsUser != nil && *sc.RunAsUser == 0) {
		fail("Deployment %s: container %s must set allowPrivilegeEscalation: false, drop ALL capabilities and not run as root", name, c.Name)
	}
	for _, p := range []struct {
		what  string
		probe *corev1.Probe
		path  string
	}{{"startupProbe", c.StartupProbe, "/healthz"}, {"livenessProbe", c.LivenessProbe, "/healthz"}, {"readinessProbe", c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			fail("Deployment %s: no HTTP %s", name, p.what)
			continue
		}
		if p.probe.HTTPGet.Path != p.path {
			fail("Deployment %s: %s GETs %s, want %s", name, p.what, p.probe.HTTPGet.Path, p.path)
		}
		if !hasPort([]corev1.Container{c}, p.probe.HTTPGet.Port.String()) {
			fail("Deployment %s: %s port %s is not a container port", name, p.what, p.probe.HTTPGet.Port.String())
		}
	}
	req, lim := c.Resources.Requests, c.Resources.Limits
	if req.Cpu().IsZero() || req.Memory().IsZero() || lim.Memory().IsZero() {
		fail("Deployment %s: resources must set requests.cpu, requests.memory and limits.memory", name)
	} else if req.Memory().Cmp(*lim.Memory()) > 0 {
		fail("Deployment %s: memory request %s above its limit %s", name, req.Memory(), lim.Memory())
	}

	env := map[string]string{}
	for _, ef := range c.EnvFrom {
		switch {
		case ef.ConfigMapRef != nil:
			cm := m.ConfigMaps[ef.ConfigMapRef.Name]
			if cm == nil {
				fail("Deployment %s: envFrom ConfigMap %s does not exist", name, ef.ConfigMapRef.Name)
				continue
			}
			for k, v := range cm.Data {
				env[ef.Prefix+k] = v
			}
		case ef.SecretRef != nil:
			if m.Secrets[ef.SecretRef.Name] == nil {
				fail("Deployment %s: envFrom Secret %s does not exist", name, ef.SecretRef.Name)
			}
		}
	}
	for _, e := range c.Env {
		env[e.Name] = e.Value
		if e.ValueFrom == nil {
			continue
		}
		if r := e.ValueFrom.SecretKeyRef; r != nil {
			s := m.Secrets[r.Name]
			if s == nil || !hasSecretKey(s, r.Key) {
				fail("Deployment %s: env %s names key %s of Secret %s, which does not exist", name, e.Name, r.Key, r.Name)
			}
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
			cm := m.ConfigMaps[r.Name]
			if cm == nil || !hasKey(cm.Data, r.Key) {
				fail("Deployment %s: env %s names key %s of ConfigMap %s, which does not exist", name, e.Name, r.Key, r.Name)
			}
		}
	}
	for _, k := range []string{"DATABASE_URL", "WAYFINDER_ENCRYPTION_KEYS", "WAYFINDER_ADMIN_KEY"} {
		if !slicesContainsEnv(c.Env, k) {
			fail("Deployment %s: env %s is not set (from a Secret)", name, k)
		}
	}
	if r := env["WAYFINDER_ROLE"]; r != "api" && r != "worker" && r != "all" {
		fail("Deployment %s: WAYFINDER_ROLE is %q, want api, worker or all", name, r)
	}
	for _, vm := range c.VolumeMounts {
		if !hasVolume(spec.Volumes, vm.Name) {
			fail("Deployment %s: volumeMount %s names no volume", name, vm.Name)
		}
	}

	// Grace: the preStop sleep, then the server's drain.
	shutdown := 30 * time.Second // the server's default
	if v, ok := env["WAYFINDER_SHUTDOWN_TIMEOUT"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			fail("Deployment %s: WAYFINDER_SHUTDOWN_TIMEOUT %q: %v", name, v, err)
		}
		shutdown = d
	}
	var preStop time.Duration
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		ps := c.Lifecycle.PreStop
		switch {
		case ps.Sleep != nil:
			preStop = time.Duration(ps.Sleep.Seconds) * time.Second
		case ps.Exec != nil && len(ps.Exec.Command) == 2 && ps.Exec.Command[0] == "sleep":
			n, err := strconv.Atoi(ps.Exec.Command[1])
			if err != nil {
				fail("Deployment %s: preStop sleep %q is not whole seconds", name, ps.Exec.Command[1])
			}
			preStop = time.Duration(n) * time.Second
		default:
			fail("Deployment %s: preStop must be a sleep", name)
		}
	}
	need := preStop + shutdown + queueStop + httpStop
	grace := 30 * time.Second // Kubernetes' default
	if spec.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
	}
	if grace < need {
		fail("Deployment %s: terminationGracePeriodSeconds %s < preStop %s + shutdown timeout %s + queue stop %s + HTTP stop %s",
			name, grace, preStop, shutdown, queueStop, httpStop)
	}
}

func sorted[V any](m map[string]V) func(func(string, V) bool) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return func(yield func(string, V) bool) {
		for _, k := range keys {
			if !yield(k, m[k]) {
				return
			}
		}
	}
}

// selecting returns the one Deployment whose pods sel selects (nil when
// none or several).
func selecting(m *Manifests, sel map[string]string) *appsv1.Deployment {
	if len(sel) == 0 {
		return nil
	}
	var found *appsv1.Deployment
	for _, d := range m.Deployments {
		if labels.SelectorFromSet(sel).Matches(labels.Set(d.Spec.Template.Labels)) {
			if found != nil {
				return nil
			}
			found = d
		}
	}
	return found
}

func hasPort(cs []corev1.Container, port string) bool {
	for _, c := range cs {
		for _, p := range c.Ports {
			if p.Name == port || strconv.Itoa(int(p.ContainerPort)) == port {
				return true
			}
		}
	}
	return false
}

func hasSecretKey(s *corev1.Secret, k string) bool {
	_, a := s.StringData[k]
	_, b := s.Data[k]
	return a || b
}

func hasVolume(vs []corev1.Volume, name string) bool {
	for _, v := range vs {
		if v.Name == name {
			return true
		}
	}
	return false
}

func slicesContainsEnv(env []corev1.EnvVar, name string) bool {
	for _, e := range env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			return true
		}
	}
	return false
}

func contains(caps []corev1.Capability, c corev1.Capability) bool {
	for _, x := range caps {
		if strings.EqualFold(string(x), string(c)) {
			return true
		}
	}
	return false
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}
