// Command gen regenerates, in order, the field documentation the scenario
// schema is described with (-docs: scenario/fielddocs.go) and the
// committed schema files (-json: schema/scenario.json, schema/suite.json).
// go generate ./schema runs both, in two steps so that the second is built
// with the first's output.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pipebench/pipebench/schema"
	"github.com/pipebench/pipebench/schema/internal/fielddoc"
	"github.com/pipebench/pipebench/sut/all"
)

func main() {
	docs := flag.Bool("docs", false, "write ../scenario/fielddocs.go from the module's sources")
	files := flag.Bool("json", false, "write the schema files of this folder")
	flag.Parse()
	if err := run(*docs, *files); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(docs, files bool) error {
	if docs {
		m, err := fielddoc.Extract("..")
		if err != nil {
			return err
		}
		src, err := fielddoc.Source(m)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join("..", "scenario", "fielddocs.go"), src, 0o644); err != nil {
			return err
		}
	}
	if files {
		reg, err := all.Registry()
		if err != nil {
			return err
		}
		out, err := schema.Files(reg)
		if err != nil {
			return err
		}
		for name, b := range out {
			if err := os.WriteFile(name, b, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}
