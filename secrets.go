package pipebench

import (
	"encoding/json"
	"net/url"
	"strings"
)

// secretKeys are configuration keys whose values are credentials wherever
// they appear.
var secretKeys = []string{"password", "passwd", "token", "secret", "api_key", "apikey", "authorization", "credentials"}

// Redacted returns a copy of p fit to be written anywhere (the Result, a
// report, the history): every component's configuration as generic data
// with credentials masked: the password of any URL with user info, and the
// value of any key that names a credential. Secret fields already write
// themselves as "***".
func (p Plan) Redacted() Plan {
	out := p
	redact := func(c *Component) {
		if c == nil || c.Config == nil {
			return
		}
		b, err := json.Marshal(c.Config)
		if err != nil {
			c.Config = nil
			return
		}
		var v any
		if json.Unmarshal(b, &v) != nil {
			c.Config = nil
			return
		}
		c.Config = redactValue("", v)
	}
	redact(&out.Target)
	redact(&out.Workload)
	if p.SUT != nil {
		s := *p.SUT
		redact(&s)
		out.SUT = &s
	}
	if p.Sink != nil {
		s := *p.Sink
		redact(&s)
		out.Sink = &s
	}
	out.Observers = make([]Component, len(p.Observers))
	for i, o := range p.Observers {
		redact(&o)
		out.Observers[i] = o
	}
	return out
}

func redactValue(key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = redactValue(k, e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = redactValue(key, e)
		}
		return x
	case string:
		lk := strings.ToLower(key)
		for _, s := range secretKeys {
			if strings.Contains(lk, s) && x != "" {
				return "***"
			}
		}
		return MaskURL(x)
	}
	return v
}

// MaskURL returns s with the password of a URL's user info replaced by
// "xxxxx" ("postgres://user:xxxxx@host/db"); anything else is returned as
// it is.
func MaskURL(s string) string {
	if !strings.Contains(s, "@") || !strings.Contains(s, "://") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
		return u.String()
	}
	return s
}
