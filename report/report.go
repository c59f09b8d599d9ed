// Package report holds what every reporter shares: the KPI table's rows,
// number and unit formatting, the order of phases. Reporters (report/text,
// report/markdown, ...) only format: every number comes from the Result.
// They are registered in the Registry's Reporters catalog by cmd/pipebench,
// from which the CLI's --format flag takes its valid names.
package report
