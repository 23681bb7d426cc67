package exec

import (
	"os"
	"path/filepath"
	"testing"
)

// A relative data path is found next to the script first, then next to the
// catalog file that declared it, else left to the working directory.
func TestResolvePath(t *testing.T) {
	scripts, catalogs := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(catalogs, "only-here.csv"), nil, 0o644)
	os.WriteFile(filepath.Join(catalogs, "both.csv"), nil, 0o644)
	os.WriteFile(filepath.Join(scripts, "both.csv"), nil, 0o644)
	decl := filepath.Join(catalogs, "catalog.yaml")
	for _, c := range []struct{ p, want string }{
		{"only-here.csv", filepath.Join(catalogs, "only-here.csv")},
		{"both.csv", filepath.Join(scripts, "both.csv")},
		{"nowhere.csv", "nowhere.csv"},
		{"/abs/x.csv", "/abs/x.csv"},
	} {
		if got := ResolvePath(c.p, scripts, decl); got != c.want {
			t.Errorf("ResolvePath(%s) = %s, want %s", c.p, got, c.want)
		}
	}
	if got := ResolvePath("only-here.csv", scripts, "<stdin>"); got != "only-here.csv" {
		t.Errorf("a statement typed in has no file to be next to: %s", got)
	}
}
