package deploy

import (
	"colo/internal/colotest"
	"os"
	"testing"
)

// coloBin is the colo binary TestMain builds for the tests that run a
// real cluster; empty when go is not on PATH.
var coloBin string

func TestMain(m *testing.M) { os.Exit(colotest.Main(m, &coloBin)) }
