package command

import (
	"time"

	"github.com/pipebench/pipebench"
)

// sinceFlag is a duration flag written as scenario durations are: 7d, 36h,
// 1h30m.
type sinceFlag time.Duration

func (s *sinceFlag) String() string {
	if *s == 0 {
		return ""
	}
	return pipebench.FormatDuration(time.Duration(*s))
}

func (s *sinceFlag) Set(v string) error {
	d, err := pipebench.ParseDuration(v)
	if err != nil {
		return err
	}
	*s = sinceFlag(d.D())
	return nil
}

func (s *sinceFlag) Type() string { return "duration" }

// D returns the duration.
func (s sinceFlag) D() time.Duration { return time.Duration(s) }
