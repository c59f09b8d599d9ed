package cliflag

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pipebench/pipebench"
)

// Error turns pflag's messages about cmd's flags into usage errors that
// say what to do: an unknown flag with the nearest one of the command, a
// value that does not parse with what to write instead. It is a
// cobra.Command's flag error function.
func Error(cmd *cobra.Command, err error) error {
	msg := err.Error()
	hint := "see " + cmd.CommandPath() + " --help" // pipebench k8s manifests, pipebench-load run
	if !cmd.HasParent() {
		hint = "see pipebench " + cmd.Name() + " --help"
	}
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		var names []string
		cmd.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
		if m := pipebench.Suggest(name, names); m != "" {
			return pipebench.UsageError(fmt.Sprintf("unknown flag --%s (did you mean --%s?)", name, m), hint, nil)
		}
		return pipebench.UsageError("unknown flag --"+name, hint, nil)
	}
	// invalid argument "30" for "--duration" flag: time: missing unit in duration "30"
	var value, flag string
	if n, _ := fmt.Sscanf(msg, "invalid argument %q for %q flag", &value, &flag); n == 2 {
		names := strings.Split(flag, ",")
		name := strings.TrimLeft(names[len(names)-1], " -")
		word := "value"
		if strings.HasSuffix(msg, "is negative: give a duration of 0 or more, like 30s") {
			hint := "give a duration of 0 or more, like 30s"
			if z := zeroMeans(cmd, name); z != "" {
				hint += " (0: " + z + ")"
			}
			return pipebench.UsageError(fmt.Sprintf("--%s %s is negative", name, value), hint, nil)
		}
		if f := cmd.Flags().Lookup(name); f != nil {
			if w, ok := kinds[f.Value.Type()]; ok {
				word, hint = w.word, w.hint
			}
		}
		return pipebench.UsageError(fmt.Sprintf("--%s %q is not a valid %s", name, value, word), hint, nil)
	}
	return pipebench.UsageError(msg, hint, nil)
}

// kinds names each pflag value type and says how to write one.
var kinds = map[string]struct{ word, hint string }{
	"duration": {"duration", "write a number with a unit: 30s, 5m, 1h30m"},
	"int":      {"whole number", "write a whole number"},
	"uint64":   {"whole number", "write a whole number"},
	"float64":  {"number", "write a number, like 0.05"},
	"bool":     {"value", "write true or false, or the flag alone"},
}

// IsUsage recognises cobra's own usage errors (unknown flag, wrong number
// of arguments, unknown command), which carry no exit code of their own.
func IsUsage(err error) bool {
	msg := err.Error()
	for _, s := range []string{"unknown flag", "unknown command", "unknown shorthand", "accepts ", "requires ", "invalid argument", "flag needs an argument"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// zeroMeans says what 0 means for a duration flag, from its help ("0:
// off"); "" when the help does not say.
func zeroMeans(cmd *cobra.Command, name string) string {
	if f := cmd.Flags().Lookup(name); f != nil {
		if _, after, ok := strings.Cut(f.Usage, "0: "); ok {
			what, _, _ := strings.Cut(after, ")")
			return strings.TrimSuffix(strings.TrimSpace(what), ".")
		}
	}
	return ""
}
