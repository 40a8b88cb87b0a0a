package api

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
)

// Flat parameters (RunAndWaitRequest.flat_params) are for hosts that pass
// every parameter as a string (seed 000 §5: an action's parameters are
// string scalars, lists comma-delimited). Each key sets one field; a flat
// value fills the field only when the request leaves it unset, so typed
// params always win. Values are parsed here; ranges are checked by the
// same validation as every run.

// flatSetter parses one flat value into the request. It returns an error
// describing the value when it does not parse.
type flatSetter func(req *wfv1.RunAndWaitRequest, val string) error

// flatKeys are the documented flat parameters.
var flatKeys = map[string]flatSetter{
	"goal": func(r *wfv1.RunAndWaitRequest, v string) error {
		fillString(&params(r).Goal, v)
		return nil
	},
	"start_url": func(r *wfv1.RunAndWaitRequest, v string) error {
		fillString(&params(r).StartUrl, v)
		return nil
	},
	"allowed_domains": func(r *wfv1.RunAndWaitRequest, v string) error {
		if p := params(r); len(p.AllowedDomains) == 0 {
			p.AllowedDomains = splitList(v)
		}
		return nil
	},
	"blocked_domains": func(r *wfv1.RunAndWaitRequest, v string) error {
		if p := params(r); len(p.BlockedDomains) == 0 {
			p.BlockedDomains = splitList(v)
		}
		return nil
	},
	"max_steps": func(r *wfv1.RunAndWaitRequest, v string) error {
		return fillInt32(&params(r).MaxSteps, v)
	},
	"headless": func(r *wfv1.RunAndWaitRequest, v string) error {
		b, err := parseBool(v)
		if err == nil && params(r).Headless == nil {
			params(r).Headless = proto.Bool(b)
		}
		return err
	},
	"timeout": func(r *wfv1.RunAndWaitRequest, v string) error {
		d, err := parseDuration(v)
		if err == nil && r.Timeout == nil {
			r.Timeout = durationpb.New(d)
		}
		return err
	},
	"run_timeout": func(r *wfv1.RunAndWaitRequest, v string) error {
		d, err := parseDuration(v)
		if b := browserConfig(r); err == nil && b.RunTimeout == nil {
			b.RunTimeout = durationpb.New(d)
		}
		return err
	},
	"controller_provider": func(r *wfv1.RunAndWaitRequest, v string) error {
		fillString(&controller(r).Provider, v)
		return nil
	},
	"controller_model": func(r *wfv1.RunAndWaitRequest, v string) error {
		fillString(&controller(r).Model, v)
		return nil
	},
	"controller_base_url": func(r *wfv1.RunAndWaitRequest, v string) error {
		fillString(&controller(r).BaseUrl, v)
		return nil
	},
	"judge_strategy": func(r *wfv1.RunAndWaitRequest, v string) error {
		s, ok := judgeStrategies[strings.ToLower(strings.TrimSpace(v))]
		if !ok {
			return fmt.Errorf("must be one of hybrid, llm, heuristic (got %q)", v)
		}
		if j := judgeSettings(r); j.Strategy == wfv1.JudgeStrategy_JUDGE_STRATEGY_UNSPECIFIED {
			j.Strategy = s
		}
		return nil
	},
	"judge_provider": func(r *wfv1.RunAndWaitRequest, v string) error {
		fillString(&judgeModel(r).Provider, v)
		return nil
	},
	"judge_model": func(r *wfv1.RunAndWaitRequest, v string) error {
		fillString(&judgeModel(r).Model, v)
		return nil
	},
	"screenshot_history_depth": func(r *wfv1.RunAndWaitRequest, v string) error {
		n, err := parseInt32(v)
		if p := params(r); err == nil && p.ScreenshotHistoryDepth == nil {
			p.ScreenshotHistoryDepth = proto.Int32(n)
		}
		return err
	},
	"max_tokens": func(r *wfv1.RunAndWaitRequest, v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return fmt.Errorf("must be an integer (got %q)", v)
		}
		if p := params(r); p.MaxTokens == 0 {
			p.MaxTokens = n
		}
		return nil
	},
	"max_cost_usd": func(r *wfv1.RunAndWaitRequest, v string) error {
		f, err := parseFloat(v)
		if p := params(r); err == nil && p.MaxCostUsd == 0 {
			p.MaxCostUsd = f
		}
		return err
	},
	"min_confidence": func(r *wfv1.RunAndWaitRequest, v string) error {
		f, err := parseFloat(v)
		if p := params(r); err == nil && p.MinConfidence == nil {
			p.MinConfidence = proto.Float64(f)
		}
		return err
	},
	"actions_per_turn": func(r *wfv1.RunAndWaitRequest, v string) error {
		return fillInt32(&params(r).ActionsPerTurn, v)
	},
	"viewport": func(r *wfv1.RunAndWaitRequest, v string) error {
		w, h, ok := strings.Cut(strings.ToLower(strings.TrimSpace(v)), "x")
		wi, werr := parseInt32(w)
		hi, herr := parseInt32(h)
		if !ok || werr != nil || herr != nil {
			return fmt.Errorf("must be WIDTHxHEIGHT in pixels, e.g. 1280x800 (got %q)", v)
		}
		if b := browserConfig(r); b.Viewport == nil {
			b.Viewport = &wfv1.Viewport{Width: wi, Height: hi}
		}
		return nil
	},
	"locale": func(r *wfv1.RunAndWaitRequest, v string) error {
		fillString(&browserConfig(r).Locale, v)
		return nil
	},
	"timezone": func(r *wfv1.RunAndWaitRequest, v string) error {
		fillString(&browserConfig(r).Timezone, v)
		return nil
	},
	"profile": func(r *wfv1.RunAndWaitRequest, v string) error {
		fillString(&browserConfig(r).Profile, v)
		return nil
	},
	"respect_robots_txt": func(r *wfv1.RunAndWaitRequest, v string) error {
		b, err := parseBool(v)
		if err == nil && b {
			p := params(r)
			if p.Governance == nil {
				p.Governance = &wfv1.GovernanceConfig{}
			}
			p.Governance.RespectRobotsTxt = true
		}
		return err
	},
	"labels": func(r *wfv1.RunAndWaitRequest, v string) error {
		p := params(r)
		for _, kv := range splitList(v) {
			k, val, ok := strings.Cut(kv, "=")
			if !ok {
				return fmt.Errorf("must be comma-separated key=value pairs (got %q)", kv)
			}
			k = strings.TrimSpace(k)
			if _, set := p.Labels[k]; set {
				continue
			}
			if p.Labels == nil {
				p.Labels = map[string]string{}
			}
			p.Labels[k] = strings.TrimSpace(val)
		}
		return nil
	},
	"request_id": func(r *wfv1.RunAndWaitRequest, v string) error {
		fillString(&r.RequestId, v)
		return nil
	},
}

var judgeStrategies = map[string]wfv1.JudgeStrategy{
	"hybrid":    wfv1.JudgeStrategy_JUDGE_STRATEGY_HYBRID,
	"llm":       wfv1.JudgeStrategy_JUDGE_STRATEGY_LLM,
	"heuristic": wfv1.JudgeStrategy_JUDGE_STRATEGY_HEURISTIC,
}

// FlatParamKeys returns the documented flat parameter keys, sorted.
func FlatParamKeys() []string { return slices.Sorted(maps.Keys(flatKeys)) }

// MergeFlatParams returns req with its flat_params merged in (and
// cleared): each flat value fills the field it names only when that field
// is unset. Unknown keys and values that do not parse are
// INVALID_ARGUMENT, one violation per key, named "flat_params.<key>"; the
// values are not validated otherwise (CreateRun and RunAndWait do that).
// req is not modified. The MCP endpoint builds its runs with it.
func MergeFlatParams(req *wfv1.RunAndWaitRequest) (*wfv1.RunAndWaitRequest, error) {
	return withFlatParams(req)
}

func withFlatParams(req *wfv1.RunAndWaitRequest) (*wfv1.RunAndWaitRequest, error) {
	if len(req.GetFlatParams()) == 0 {
		return req, nil
	}
	out := proto.Clone(req).(*wfv1.RunAndWaitRequest)
	flat := out.FlatParams
	out.FlatParams = nil
	var v fault.Violations
	for _, key := range slices.Sorted(maps.Keys(flat)) {
		field := "flat_params." + key
		set, ok := flatKeys[key]
		if !ok {
			v.Add(field, "unknown parameter; known: %s", strings.Join(FlatParamKeys(), ", "))
			continue
		}
		if strings.TrimSpace(flat[key]) == "" {
			continue // hosts send every parameter they declare; blank is unset
		}
		if err := set(out, flat[key]); err != nil {
			v.Add(field, "%v", err)
		}
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func params(r *wfv1.RunAndWaitRequest) *wfv1.RunParams {
	if r.Params == nil {
		r.Params = &wfv1.RunParams{}
	}
	return r.Params
}

func controller(r *wfv1.RunAndWaitRequest) *wfv1.ModelSettings {
	p := params(r)
	if p.Controller == nil {
		p.Controller = &wfv1.ModelSettings{}
	}
	return p.Controller
}

func judgeSettings(r *wfv1.RunAndWaitRequest) *wfv1.JudgeSettings {
	p := params(r)
	if p.Judge == nil {
		p.Judge = &wfv1.JudgeSettings{}
	}
	return p.Judge
}

func judgeModel(r *wfv1.RunAndWaitRequest) *wfv1.ModelSettings {
	j := judgeSettings(r)
	if j.Model == nil {
		j.Model = &wfv1.ModelSettings{}
	}
	return j.Model
}

func browserConfig(r *wfv1.RunAndWaitRequest) *wfv1.BrowserConfig {
	p := params(r)
	if p.Browser == nil {
		p.Browser = &wfv1.BrowserConfig{}
	}
	return p.Browser
}

// fillString sets *dst to v (trimmed) when *dst is empty.
func fillString(dst *string, v string) {
	if *dst == "" {
		*dst = strings.TrimSpace(v)
	}
}

func fillInt32(dst *int32, v string) error {
	n, err := parseInt32(v)
	if err == nil && *dst == 0 {
		*dst = n
	}
	return err
}

// splitList splits a comma-delimited list, trimming entries and dropping
// empty ones.
func splitList(v string) []string {
	var out []string
	for s := range strings.SplitSeq(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func parseInt32(v string) (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("must be an integer (got %q)", v)
	}
	return int32(n), nil
}

func parseFloat(v string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return 0, fmt.Errorf("must be a number (got %q)", v)
	}
	return f, nil
}

// parseBool accepts true/false, yes/no, on/off and 1/0, in any case.
func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "yes", "on", "1":
		return true, nil
	case "false", "no", "off", "0":
		return false, nil
	}
	return false, fmt.Errorf("must be true or false (got %q)", v)
}

// parseDuration accepts a Go duration ("90s", "5m") or a number of
// seconds ("300").
func parseDuration(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if n, err := strconv.ParseFloat(v, 64); err == nil && n >= 0 && n < 1e9 {
		return time.Duration(n * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf(`must be a duration such as "90s" or "5m", or a number of seconds (got %q)`, v)
	}
	return d, nil
}
