package pipebench

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Redacted is what stands in for a password or a secret value in anything
// pipebench writes.
const Redacted = "xxxxx"

// userinfo finds the password of a URL's user info anywhere in a text:
// scheme://user:password@. The password stops at the last '@' before the
// host, so a password holding '@' or ':' is hidden whole.
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^\s:/@"'?#]*):([^\s"']*)@([^\s@"']*)`)

// RedactURL returns s with the password of its user info replaced by
// Redacted (postgres://user:xxxxx@host/db) and the value of every query
// parameter named like a credential too (?password=xxxxx, &token=xxxxx).
// Anything else comes back unchanged. It accepts any text, URL or not, and
// never fails: a string that does not parse as a URL is redacted the same
// way, so a malformed URL cannot leak its password through an error
// message.
func RedactURL(s string) string { return RedactText(s) }

// RedactText applies RedactURL to every URL found in a free text (an error
// message, a log line). The password is taken to run to the last '@' of
// the URL, so a password that itself holds '@', ':' or '/' is hidden whole;
// the price is that a URL with an '@' in its path and a port before it
// (http://h:80/a@b) is over-redacted.
//
// A query string's values are written only for parameters on a short list
// known to carry no secret (SafeQueryParam): every other value is
// redacted, so that a signed URL's signature (X-Amz-Signature, sig=) is
// hidden whatever the vendor calls it.
func RedactText(s string) string {
	if !strings.Contains(s, "://") && !strings.Contains(s, "=") {
		return s
	}
	s = userinfo.ReplaceAllString(s, "${1}:"+Redacted+"@${3}")
	s = natsToken.ReplaceAllString(s, "${1}"+Redacted+"@")
	s = queryString.ReplaceAllStringFunc(s, redactQuery)
	return secretParam.ReplaceAllString(s, "${1}"+Redacted)
}

// queryString finds a query string: '?' right after a URL's or a path's
// last character, then name=value pairs separated by '&' or ';'.
var queryString = regexp.MustCompile(`[^\s?"'<>]\?[^\s=&;#"'<>?]+=[^\s#"'<>]*`)

// redactQuery redacts the values of a query string (with the character
// before its '?') whose names are not SafeQueryParam.
func redactQuery(m string) string {
	lead, q, _ := strings.Cut(m, "?")
	var b strings.Builder
	b.WriteString(lead + "?")
	for q != "" {
		i := strings.IndexAny(q, "&;")
		pair, sep := q, ""
		if i >= 0 {
			pair, sep, q = q[:i], q[i:i+1], q[i+1:]
		} else {
			q = ""
		}
		name, value, hasValue := strings.Cut(pair, "=")
		if hasValue && value != "" && value != Redacted && !SafeQueryParam(name) {
			value = Redacted
		}
		b.WriteString(name)
		if hasValue {
			b.WriteString("=" + value)
		}
		b.WriteString(sep)
	}
	return b.String()
}

// safeQueryParams are the query parameters whose values pipebench writes
// out (in Results, the history, reports, logs, Kubernetes objects): names
// known to carry no secret. Any other value is redacted.
var safeQueryParams = []string{
	// what a request asks for
	"format", "timeout", "encoding", "compression", "precision", "limit", "query", "match[]", "start", "end", "step",
	"db", "org", "bucket", "partition",
	// database connection settings (PostgreSQL, SQLite)
	"sslmode", "connect_timeout", "application_name", "search_path", "target_session_attrs",
	"mode", "cache", "_pragma", "_busy_timeout", "_journal_mode", "_txlock",
}

// SafeQueryParam tells whether the value of a URL's query parameter name
// (any case, URL-escaped or not) may be written out: whether it is on
// pipebench's short list of parameters known to carry no secret.
func SafeQueryParam(name string) bool {
	if u, err := url.QueryUnescape(name); err == nil {
		name = u
	}
	return slices.Contains(safeQueryParams, strings.ToLower(name))
}

// safeHeaders are the HTTP header (and Kafka record header) names whose
// values pipebench writes out: names known to carry no secret. Any other
// header's value is redacted in every output, and refused as a literal
// from Kubernetes objects (it must come from a Secret there).
var safeHeaders = []string{
	// content negotiation and the request itself
	"accept", "accept-charset", "accept-encoding", "accept-language", "cache-control", "connection",
	"content-encoding", "content-language", "content-length", "content-type", "expect", "host", "te", "user-agent",
	// tracing and request identifiers
	"traceparent", "tracestate", "x-request-id", "x-correlation-id",
	// a tenant's name, which routes requests (Loki, Mimir, Tempo; the
	// cloudevents example's X-Tenant); a secret tenant belongs in
	// secret_headers
	"x-scope-orgid", "x-tenant",
	// the CloudEvents attributes in binary mode
	"ce-specversion", "ce-id", "ce-source", "ce-type", "ce-subject", "ce-time", "ce-dataschema", "ce-datacontenttype",
	"ce-traceparent", "ce-tracestate", "ce-partitionkey", "ce-sequence",
	// pipebench's own (the sequence headers, the pipeline of a request)
	"pipebench-seq", "pipebench-sent", "pipebench-count", "x-pipebench-pipeline",
	// Prometheus remote write's
	"x-prometheus-remote-write-version",
}

// SafeHeader tells whether the value of a header (any case) may be
// written out: whether its name is on pipebench's short list of headers
// known to carry no secret (content type, user agent, accept, CloudEvents
// attributes and the like).
func SafeHeader(name string) bool {
	return slices.Contains(safeHeaders, strings.ToLower(strings.TrimSpace(name)))
}

// IsHeadersKey tells whether a configuration key holds headers by name
// (headers, record_headers): the values under it are shown only for
// SafeHeader names.
func IsHeadersKey(key string) bool {
	k := strings.ToLower(key)
	return k == "headers" || strings.HasSuffix(k, "_headers")
}

// natsToken finds the user info of a NATS URL without a password
// (nats://TOKEN@host): to NATS servers, that is an authentication token.
var natsToken = regexp.MustCompile(`((?:nats|tls|ws|wss)://)([^\s:/@"']+)@`)

// secretParam finds query parameters named like a credential.
var secretParam = regexp.MustCompile(`(?i)([?&;](?:[a-z0-9_.-]*(?:password|passwd|secret|token|apikey|api_key|api-key|credential|auth)[a-z0-9_.-]*)=)([^&;\s"'#]*)`)

// secretWords mark a flag or a variable whose value is a credential.
var secretWords = []string{"password", "passwd", "pwd", "secret", "token", "apikey", "api-key", "api_key",
	"credential", "auth", "cookie", "private-key", "private_key", "access-key", "access_key", "dsn"}

// IsSecretName tells whether a flag or environment variable name (any case,
// with or without leading dashes) names a credential: PB_TOKEN,
// --password, --api-key, AUTHORIZATION.
func IsSecretName(name string) bool {
	n := strings.ToLower(strings.TrimLeft(name, "-"))
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// secretHeader tells whether the value of an HTTP header "Name: value"
// is to be hidden: whenever its name is not SafeHeader.
func secretHeader(h string) (name string, ok bool) {
	name, _, found := strings.Cut(h, ":")
	if !found {
		return "", false
	}
	name = strings.TrimSpace(name)
	return name, !SafeHeader(name)
}

// RedactArgs returns a copy of a command line with every credential
// replaced by Redacted, for the manifest of a Result:
//   - the password of every URL (--store postgres://u:p@h/db, --store=...);
//   - the value of a flag whose name is a secret (--token X, --password=X);
//   - NAME=VALUE arguments whose NAME is a secret (PB_TOKEN=X);
//   - header flags whose header is not SafeHeader (-H "Authorization: Bearer X").
//
// args itself is not changed.
func RedactArgs(args []string) []string {
	out := make([]string, len(args))
	nextSecret, nextHeader := false, false
	for i, a := range args {
		switch {
		case nextSecret:
			out[i] = Redacted
			nextSecret = false
			continue
		case nextHeader:
			out[i] = redactHeader(a)
			nextHeader = false
			continue
		}
		if strings.HasPrefix(a, "-") && a != "-" && a != "--" {
			name, val, hasVal := strings.Cut(a, "=")
			isHeader := isHeaderFlag(name)
			switch {
			case hasVal && isHeader:
				out[i] = name + "=" + redactHeader(val)
			case hasVal && IsSecretName(name):
				out[i] = name + "=" + Redacted
			case hasVal:
				out[i] = name + "=" + RedactURL(val)
			default:
				out[i] = a
				nextSecret = IsSecretName(name)
				nextHeader = isHeader
			}
			continue
		}
		if name, _, ok := strings.Cut(a, "="); ok && isEnvName(name) && IsSecretName(name) {
			out[i] = name + "=" + Redacted
			continue
		}
		out[i] = RedactURL(a)
	}
	return out
}

func isHeaderFlag(name string) bool {
	n := strings.ToLower(strings.TrimLeft(name, "-"))
	return n == "h" || strings.Contains(n, "header")
}

// redactHeader hides the value of "Name: value" when Name is a credential.
func redactHeader(h string) string {
	if name, ok := secretHeader(h); ok {
		return name + ": " + Redacted
	}
	return RedactURL(h)
}

func isEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c != '_' && (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// Redact hides, in place, any credential that reached a Result through a
// URL, an argument, a label or a message, before it is printed, written or
// saved.
func (res *Result) Redact() {
	m := &res.Manifest
	m.Args = RedactArgs(m.Args)
	m.Target = RedactText(m.Target)
	m.File = RedactText(m.File)
	for i := range m.Reasons {
		m.Reasons[i] = RedactText(m.Reasons[i])
	}
	for k, v := range m.Labels {
		m.Labels[k] = RedactText(v)
	}
	for i := range res.Thresholds {
		res.Thresholds[i].Message = RedactText(res.Thresholds[i].Message)
	}
	for i := range res.Detections {
		res.Detections[i].Message = RedactText(res.Detections[i].Message)
	}
	for class, ms := range res.Errors {
		for i := range ms {
			ms[i] = RedactText(ms[i])
		}
		res.Errors[class] = ms
	}
	for i := range res.Summary {
		res.Summary[i] = RedactText(res.Summary[i])
	}
	phases := res.Phases
	if res.Total != nil {
		phases = append(append([]PhaseResult(nil), phases...), *res.Total)
	}
	for _, p := range phases {
		for _, k := range p.KPIs {
			for lk, lv := range k.Labels {
				k.Labels[lk] = RedactText(lv)
			}
		}
	}
	for _, s := range res.Series {
		for lk, lv := range s.Labels {
			s.Labels[lk] = RedactText(lv)
		}
	}
	res.Plan = res.Plan.Redacted()
}
