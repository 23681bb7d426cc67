package ortlib

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindOrder(t *testing.T) {
	dir := t.TempDir()
	flagLib := filepath.Join(dir, "flag.so")
	envLib := filepath.Join(dir, "env.so")
	for _, p := range []string{flagLib, envLib} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(EnvVar, envLib)

	got, err := Find(flagLib)
	if err != nil || got != flagLib {
		t.Fatalf("flag first: got %q, %v", got, err)
	}
	got, err = Find("")
	if err != nil || got != envLib {
		t.Fatalf("env second: got %q, %v", got, err)
	}
}

func TestFindMissingExplicitSaysWhere(t *testing.T) {
	t.Setenv(EnvVar, "")
	missing := filepath.Join(t.TempDir(), "nope.so")
	_, err := Find(missing)
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("want ErrNotFound, got %v", err)
	}
	if !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "(flag)") {
		t.Fatalf("error must name the path and its source: %v", err)
	}
}

func TestFindMissingEnvDoesNotFallBack(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.so")
	t.Setenv(EnvVar, missing)
	_, err := Find("")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "env "+EnvVar) {
		t.Fatalf("env path missing must be an error naming the env var: %v", err)
	}
}

// The setup step caches the library at the repository root; tests run from the
// package folder, so Find must walk up to it.
func TestFindCacheFromSetup(t *testing.T) {
	t.Setenv(EnvVar, "")
	got, err := Find("")
	if err != nil {
		t.Fatalf("setup should have cached the library: %v", err)
	}
	if !strings.HasSuffix(got, CacheRel) {
		t.Fatalf("got %q, want a path ending in %s", got, CacheRel)
	}
}
