package cli

import (
	"flag"
	"fmt"
	"strings"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// labelList is a repeatable key=value flag.
type labelList []string

func (l *labelList) String() string { return strings.Join(*l, ",") }

func (l *labelList) Set(v string) error {
	k, _, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("label %q is not key=value", v)
	}
	*l = append(*l, v)
	return nil
}

// statusList is a repeatable run status flag: "completed",
// "awaiting-approval", "RUN_STATUS_FAILED".
type statusList []wfv1.RunStatus

func (l *statusList) String() string { return fmt.Sprint(*l) }

func (l *statusList) Set(v string) error {
	st, ok := parseStatus(v)
	if !ok {
		return fmt.Errorf("unknown status %q (queued, running, awaiting_approval, completed, failed, max_steps_reached, error, cancelled)", v)
	}
	*l = append(*l, st)
	return nil
}

func parseStatus(v string) (wfv1.RunStatus, bool) {
	name := strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(v), "-", "_"))
	if !strings.HasPrefix(name, "RUN_STATUS_") {
		name = "RUN_STATUS_" + name
	}
	n, ok := wfv1.RunStatus_value[name]
	if !ok || n == 0 {
		return 0, false
	}
	return wfv1.RunStatus(n), true
}

// statusName is a status without its enum prefix: "COMPLETED".
func statusName(st wfv1.RunStatus) string {
	return strings.TrimPrefix(st.String(), "RUN_STATUS_")
}

// isSet reports whether the flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

// oneArg returns the single positional argument a command takes.
func oneArg(pos []string, what string) (string, error) {
	switch len(pos) {
	case 1:
		if strings.TrimSpace(pos[0]) == "" {
			return "", usageErrorf("%s must not be empty", what)
		}
		return pos[0], nil
	case 0:
		return "", usageErrorf("missing %s", what)
	default:
		return "", usageErrorf("unexpected arguments after %s: %s", what, strings.Join(pos[1:], " "))
	}
}
