package check

import (
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

// AdapterConfig is the part of prometheus-adapter's configuration the
// worker HPA depends on.
type AdapterConfig struct {
	ExternalRules []AdapterRule `json:"externalRules"`
}

// AdapterRule is one prometheus-adapter discovery rule.
type AdapterRule struct {
	SeriesQuery string `json:"seriesQuery"`
	Resources   struct {
		Overrides map[string]struct {
			Group    string `json:"group,omitempty"`
			Resource string `json:"resource"`
		} `json:"overrides,omitempty"`
		Template string `json:"template,omitempty"`
	} `json:"resources"`
	Name struct {
		Matches string `json:"matches"`
		As      string `json:"as"`
	} `json:"name"`
	MetricsQuery string `json:"metricsQuery"`
}

// LoadAdapterConfig reads a prometheus-adapter configuration strictly:
// an unknown key is an error.
func LoadAdapterConfig(path string) (*AdapterConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c AdapterConfig
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}

// CheckAdapter checks that every External metric the HPAs scale on is
// served by a rule of c, built from a metric the server exports (named in
// exported).
func CheckAdapter(c *AdapterConfig, m *Manifests, exported []string) []error {
	var errs []error
	rules := map[string]AdapterRule{}
	for _, r := range c.ExternalRules {
		rules[r.Name.As] = r
		if !strings.Contains(r.MetricsQuery, "<<.LabelMatchers>>") {
			errs = append(errs, fmt.Errorf("rule %s: metricsQuery lacks <<.LabelMatchers>> (the HPA's selector and namespace would be ignored)", r.Name.As))
		}
		ok := false
		for _, e := range exported {
			if strings.Contains(r.SeriesQuery, e+"{") && strings.Contains(r.MetricsQuery, e+"{") {
				ok = true
			}
		}
		if !ok {
			errs = append(errs, fmt.Errorf("rule %s: seriesQuery and metricsQuery must query a metric the server exports (%v)", r.Name.As, exported))
		}
	}
	for name, h := range sorted(m.HPAs) {
		for _, mt := range h.Spec.Metrics {
			if mt.External == nil {
				continue
			}
			if _, ok := rules[mt.External.Metric.Name]; !ok {
				errs = append(errs, fmt.Errorf("HorizontalPodAutoscaler %s: External metric %s has no prometheus-adapter rule", name, mt.External.Metric.Name))
			}
		}
	}
	return errs
}
