package pipebench

import "encoding/json"

// Redacted returns a copy of p fit to be written anywhere (the Result, a
// report, the history): every component's configuration as generic data
// with credentials masked: the password of any URL with user info, every
// query parameter's value but those known to carry no secret
// (SafeQueryParam), the value of any key that names a credential, and
// every header's value but those known to carry no secret (SafeHeader,
// under a key IsHeadersKey). Secret fields already write themselves as
// "***".
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
		headers := IsHeadersKey(key)
		for k, e := range x {
			if s, ok := e.(string); ok && headers && s != "" && !SafeHeader(k) {
				x[k] = Redacted
				continue
			}
			x[k] = redactValue(k, e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = redactValue(key, e)
		}
		return x
	case string:
		if x != "" && IsSecretName(key) {
			return "***"
		}
		return RedactText(x)
	}
	return v
}
