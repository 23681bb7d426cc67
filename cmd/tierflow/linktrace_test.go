package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunLinkTraceRejectsBadInput(t *testing.T) {
	dir, q := writeRunFiles(t)
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("t_s,kbit_s\n0,800\n5,zero\n"), 0o644)
	good := filepath.Join("..", "..", "examples", "traces", "synthetic.csv")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--link-trace", "edge:hub=" + bad}, bad + ":3: bad bandwidth trace: kbit_s \"zero\""},
		{[]string{"--link-trace", "edge-hub=" + good}, "want TIER_A:TIER_B=FILE"},
		{[]string{"--link-trace", "edge:moon=" + good}, `no tier "moon"`},
		{[]string{"--link-trace", "edge:hub=" + filepath.Join(dir, "none.csv")}, "none.csv"},
		{[]string{"--local", "--link-trace", "edge:hub=" + good}, "not with --local"},
	} {
		code, _, errs := runCLI(t, "", append(append([]string{"run"}, c.args...), q)...)
		if code != exitBadInput || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, errs, exitBadInput, c.want)
		}
	}
}
