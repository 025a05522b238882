package cli

import (
	"bytes"
	"encoding/json"
	"runtime"
	"runtime/debug"
)

// Build is what the binary knows of its own build.
type Build struct {
	Version  string `json:"version"`
	Revision string `json:"vcs_revision,omitempty"`
	Time     string `json:"vcs_time,omitempty"`
	Modified *bool  `json:"vcs_modified,omitempty"`
	Go       string `json:"go"`
}

// ReadBuild reads the module version and the version-control stamp of the
// running binary (runtime/debug.ReadBuildInfo). A binary built outside a
// module, or by go test, has version "(devel)" and no revision.
func ReadBuild() Build {
	b := Build{Version: "(devel)", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if v := bi.Main.Version; v != "" {
		b.Version = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			m := s.Value == "true"
			b.Modified = &m
		}
	}
	return b
}

// String is the line colo version prints.
func (b Build) String() string {
	s := "colo " + b.Version
	if b.Revision != "" {
		s += ", revision " + b.Revision
		if b.Modified != nil && *b.Modified {
			s += " (modified)"
		}
	}
	if b.Time != "" {
		s += ", committed " + b.Time
	}
	return s + ", " + b.Go + " " + runtime.GOOS + "/" + runtime.GOARCH
}

// Record heads every JSON document: the build and the command line.
type Record struct {
	Build
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Options map[string]string `json:"options"`
}

// Stamp returns the JSON of v headed by the run record: the fields of v
// follow the record's when v is an object; any other v is "results". The
// document is indented and ends in a newline.
func Stamp(rec Record, v any) ([]byte, error) {
	head, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Write(head[:len(head)-1]) // without its closing brace
	switch body = bytes.TrimSpace(body); {
	case len(body) >= 2 && body[0] == '{':
		if inner := bytes.TrimSpace(body[1 : len(body)-1]); len(inner) > 0 {
			b.WriteByte(',')
			b.Write(inner)
		}
	default:
		b.WriteString(`,"results":`)
		b.Write(body)
	}
	b.WriteByte('}')
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}
