package scenario

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pipebench/pipebench"
)

// pathsConfig is a plug-in configuration naming a file.
type pathsConfig struct {
	File string `yaml:"file"`
}

func (c *pathsConfig) RelativeTo(dir string) { c.File = pipebench.InDir(dir, c.File) }

func (c *pathsConfig) Validate() error {
	if _, err := os.Stat(c.File); err != nil {
		return err
	}
	return nil
}

// A relative file path in a plug-in's settings is read from the scenario
// file's folder, whatever the working directory; an absolute one stays;
// a scenario without a folder (a built-in, stdin) leaves it as written.
func TestFilePathsRelativeToTheScenario(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "col.yaml"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	scen := filepath.Join(dir, "s.yaml")
	for _, c := range []struct{ file, want string }{{"col.yaml", filepath.Join(dir, "col.yaml")}, {filepath.Join(dir, "col.yaml"), filepath.Join(dir, "col.yaml")}} {
		text := "name: p\nsut: {type: withfile, file: " + c.file + "}\ntarget: {driver: http}\nphases: [{name: a, duration: 1s, rate: 1/s}]\n"
		if err := os.WriteFile(scen, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		p := params()
		p.Registry.SUTs.Register(pipebench.NewFactory("withfile", "a system under test reading a file", func() *pathsConfig { return &pathsConfig{} },
			func(c *pathsConfig, env pipebench.Env) (pipebench.SUT, error) { return nil, nil }))
		sc, err := Load(scen, p)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if got := sc.SUT.Config.(*pathsConfig).File; got != c.want {
			t.Errorf("%s read as %s, want %s", c.file, got, c.want)
		}
		if _, err := Parse("builtin:p", []byte(text), p); err == nil && c.file == "col.yaml" {
			t.Errorf("a built-in found %s beside a file it has no folder of", c.file)
		}
	}
}
