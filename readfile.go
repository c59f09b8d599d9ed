package pipebench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Input size limits: what pipebench reads of a file it is given, checked
// while reading, so that a wrong file (/dev/zero, a disk image) is an error
// and not an exhausted memory.
const (
	MaxScenarioSize = 4 << 20   // a scenario or suite file
	MaxProtoSize    = 4 << 20   // a .proto file
	MaxResultSize   = 512 << 20 // a Result (a long soak's series) or shard
)

// ReadFile reads the file at path ("-": standard input), refusing it once
// more than limit bytes were read, with an error that names the file, the
// limit and what to do.
func ReadFile(path string, limit int64) ([]byte, error) {
	var r io.Reader
	if path == "-" {
		r = os.Stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	return ReadAllLimit(r, path, limit)
}

// ReadAllLimit reads r to its end, refusing more than limit bytes; name
// says what r is in the error.
func ReadAllLimit(r io.Reader, name string, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &Error{Code: ExitUsage, Msg: fmt.Sprintf("%s is larger than %s, the most pipebench reads of such a file", name, FormatBytes(limit)),
			Hint: "check that it is the file you meant"}
	}
	return data, nil
}

// ReadResult reads a Result written by pipebench (`run --out`, a shard, a
// checkpoint), refusing a file that is too large, is no Result, or comes
// from a newer pipebench, with an error saying which and what to do.
func ReadResult(path string) (*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, UsageError("cannot read the result", "give the path of a file written by `pipebench run --out`", err)
	}
	defer f.Close()
	// Decoded as it is read, through the limit: a file that is no JSON
	// fails at its first byte, one too large at the limit.
	lr := &io.LimitedReader{R: f, N: MaxResultSize + 1}
	var res Result
	if err := json.NewDecoder(lr).Decode(&res); err != nil {
		if lr.N <= 0 {
			return nil, &Error{Code: ExitUsage, Msg: fmt.Sprintf("%s is larger than %s, the most pipebench reads of a Result", path, FormatBytes(MaxResultSize)),
				Hint: "check that it is the file you meant"}
		}
		return nil, UsageError(fmt.Sprintf("%s is not a pipebench result", path), "give the path of a file written by `pipebench run --out`", err)
	}
	if res.Schema == 0 || res.Schema > ResultSchema {
		return nil, UsageError(fmt.Sprintf("%s has result schema %d; this pipebench reads up to %d", path, res.Schema, ResultSchema), "", nil)
	}
	return &res, nil
}
