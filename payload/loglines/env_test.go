package loglines

import (
	"log/slog"

	"github.com/pipebench/pipebench"
)

func pipebenchEnv() pipebench.Env { return pipebench.Env{Logger: slog.Default()} }
