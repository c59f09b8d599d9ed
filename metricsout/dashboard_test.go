package metricsout_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench/metricsout"
)

// dashboardFile is the Grafana dashboard of these series.
const dashboardFile = "../examples/grafana-dashboard.json"

// grafanaSchemaVersion is the dashboard JSON model's version Grafana 13
// writes (its last migration is to 43).
const grafanaSchemaVersion = 43

type dsRef struct{ Type, UID string }

type gridPos struct{ X, Y, W, H int }

type target struct {
	RefID      string `json:"refId"`
	Expr       string
	Instant    bool
	Datasource *dsRef
}

type panel struct {
	ID          int
	Type        string
	Title       string
	Description string
	Datasource  *dsRef
	GridPos     gridPos `json:"gridPos"`
	Targets     []target
	FieldConfig struct {
		Defaults struct{ Unit string }
	} `json:"fieldConfig"`
}

type dashboard struct {
	Title         string
	UID           string
	SchemaVersion int `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name, Type, AllValue string
			Query                any
			Definition           string
		}
	}
	Annotations struct {
		List []struct {
			Name        string
			Expr        string
			TitleFormat string `json:"titleFormat"`
			BuiltIn     int    `json:"builtIn"`
			Datasource  *dsRef
		}
	}
	Panels []panel
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// variable returns the query of the dashboard's variable name.
func (d dashboard) variable(name string) string {
	for _, v := range d.Templating.List {
		if v.Name == name {
			return v.Definition
		}
	}
	return ""
}

// expand substitutes the dashboard's variables as Grafana would for one
// choice of each (the run id and the label values are regex-safe).
func expand(expr string, vars map[string]string) string {
	r := strings.NewReplacer("$__rate_interval", vars["__rate_interval"], "$__range", vars["__range"], "$job", vars["job"], "$instance", vars["instance"], "$run", vars["run"])
	return r.Replace(expr)
}

var metricName = regexp.MustCompile(`\bpipebench_[a-z0-9_]+`)

// The dashboard is what Grafana 13 imports without migrating it, and each
// of its queries names series that exist and is limited to the chosen
// job, instance and run.
func TestDashboardShape(t *testing.T) {
	d := loadDashboard(t)
	if d.SchemaVersion != grafanaSchemaVersion {
		t.Errorf("schemaVersion %d, want %d", d.SchemaVersion, grafanaSchemaVersion)
	}
	if d.UID == "" || d.Title == "" {
		t.Error("no uid or title")
	}
	for _, v := range []string{"job", "instance", "run"} {
		if !strings.HasPrefix(d.variable(v), "label_values(") {
			t.Errorf("variable %s: %q", v, d.variable(v))
		}
	}
	var phases bool
	for _, a := range d.Annotations.List {
		if a.BuiltIn == 0 {
			phases = phases || strings.Contains(a.Expr, metricsout.MetricPhase) && a.TitleFormat == "{{phase}}"
			if a.Datasource == nil || a.Datasource.UID != "${datasource}" {
				t.Errorf("annotation %s: datasource %v", a.Name, a.Datasource)
			}
		}
	}
	if !phases {
		t.Error("no phase annotations")
	}
	known := metricsout.Names()
	ids := map[int]bool{}
	var areas []gridPos
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v", p.Title, g)
		}
		for _, o := range areas {
			if g.X < o.X+o.W && o.X < g.X+g.W && g.Y < o.Y+o.H && o.Y < g.Y+g.H {
				t.Errorf("panel %q overlaps another at %+v", p.Title, o)
			}
		}
		areas = append(areas, g)
		if p.Type == "row" {
			continue
		}
		if p.Type != "timeseries" && p.Type != "stat" && p.Type != "bargauge" {
			t.Errorf("panel %q: type %s", p.Title, p.Type)
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" || p.Description == "" || p.FieldConfig.Defaults.Unit == "" {
			t.Errorf("panel %q: datasource %v, description %q, unit %q", p.Title, p.Datasource, p.Description, p.FieldConfig.Defaults.Unit)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if refs[tg.RefID] || tg.RefID == "" {
				t.Errorf("panel %q: refId %q", p.Title, tg.RefID)
			}
			refs[tg.RefID] = true
			if p.Type == "stat" && !tg.Instant {
				t.Errorf("panel %q: a stat's query is instant (the value now), not a range", p.Title)
			}
			for _, sel := range []string{`job=~"$job"`, `instance=~"$instance"`, `run_id=~"$run"`} {
				if !strings.Contains(tg.Expr, sel) {
					t.Errorf("panel %q: %s does not select %s", p.Title, tg.Expr, sel)
				}
			}
			for _, n := range metricName.FindAllString(tg.Expr, -1) {
				base := strings.TrimSuffix(n, "_bucket")
				if !slices.Contains(known, base) && !strings.HasPrefix(n, metricsout.ObservedPrefix) {
					t.Errorf("panel %q: %s is not a pipebench series", p.Title, n)
				}
			}
		}
	}
}

// busPanel reports whether a panel shows an event bus's observer (Kafka,
// JetStream): empty in a run without one.
func busPanel(title string) bool {
	return strings.HasPrefix(title, "Kafka") || strings.HasPrefix(title, "JetStream") || strings.HasPrefix(title, "Consumer pending")
}

// checkDashboard runs every query of the dashboard against p over [from,
// to], with its variables set to vars, as Grafana does: a range query, or
// an instant one at to (stat and bar panels: the value now, over
// $__range). The variables' own queries give the chosen values, no query
// fails, every panel shows data (an event bus's only when its title starts
// with one of buses; none of those whose title starts with one of
// mayBeEmpty), each query of a stat panel gives one series, and the
// phase annotation marks every phase p stored a sample of (on a loaded
// machine a short phase can fall between two scrapes that timed out), done
// among them.
func checkDashboard(t *testing.T, p *prom, vars map[string]string, from, to time.Time, buses, mayBeEmpty []string) {
	t.Helper()
	d := loadDashboard(t)
	if vars["__range"] == "" {
		vars["__range"] = strconv.Itoa(int(to.Sub(from).Seconds())+1) + "s"
	}
	lv := regexp.MustCompile(`^label_values\((.*), *([a-z_]+)\)$`)
	for _, v := range []string{"job", "instance", "run"} {
		m := lv.FindStringSubmatch(expand(d.variable(v), vars))
		if m == nil {
			t.Fatalf("variable %s: %q", v, d.variable(v))
		}
		values, err := p.labelValues(m[1], m[2], from, to)
		if err != nil {
			t.Errorf("variable %s: %v", v, err)
		} else if !slices.Contains(values, vars[v]) {
			t.Errorf("variable %s offers %v, not %s", v, values, vars[v])
		}
	}
	step := 500 * time.Millisecond
	for _, pn := range d.Panels {
		if pn.Type == "row" {
			continue
		}
		wanted := !busPanel(pn.Title)
		for _, b := range buses {
			wanted = wanted || strings.HasPrefix(pn.Title, b)
		}
		for _, b := range mayBeEmpty {
			wanted = wanted && !strings.HasPrefix(pn.Title, b)
		}
		points := 0
		for _, tg := range pn.Targets {
			q := expand(tg.Expr, vars)
			if tg.Instant {
				series, err := p.instantAt(q, to)
				if err != nil {
					t.Errorf("panel %q, query %s: %v", pn.Title, q, err)
				}
				if pn.Type == "stat" && len(series) != 1 {
					t.Errorf("stat %q, query %s: %d series, want 1: %v", pn.Title, q, len(series), series)
				}
				points += len(series)
				continue
			}
			series, err := p.rangeQuery(q, from, to, step)
			if err != nil {
				t.Errorf("panel %q, query %s: %v", pn.Title, q, err)
			}
			for _, s := range series {
				points += s.Points
			}
		}
		if points == 0 && wanted {
			t.Errorf("panel %q shows no data", pn.Title)
		}
	}
	for _, a := range d.Annotations.List {
		if a.Expr == "" {
			continue
		}
		series, err := p.rangeQuery(expand(a.Expr, vars), from, to, step)
		if err != nil {
			t.Errorf("annotation %s: %v", a.Name, err)
			continue
		}
		var got, stored []string
		for _, s := range series {
			got = append(got, s.Metric["phase"])
		}
		seen, err := p.rangeQuery(expand(`max_over_time(pipebench_phase{run_id=~"$run", instance=~"$instance"}[1h]) == 1`, vars), to, to, step)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range seen {
			stored = append(stored, s.Metric["phase"])
		}
		slices.Sort(got)
		slices.Sort(stored)
		if !slices.Equal(got, stored) || !slices.Contains(got, metricsout.PhaseDone) {
			t.Errorf("annotation %s marks %v, the phases stored %v", a.Name, got, stored)
		}
	}
}

// instantAt runs an instant query evaluated at at, as Grafana runs a
// panel's instant query at the end of its time range.
func (p *prom) instantAt(q string, at time.Time) ([]sample, error) {
	saved := p.at
	p.at = strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)
	defer func() { p.at = saved }()
	return p.tryQuery(q)
}
