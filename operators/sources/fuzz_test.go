package sources

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"
)

// The file readers take whatever is on disk: fuzz each one (seed corpora in
// testdata/fuzz/FuzzX; `make test` runs every target for a few seconds).
// Properties: no panic; every failure is a bad file or a bad row; and the
// readers of this package's own code (CSV, JSON lines) leak no Arrow memory.

func fuzzFile(t *testing.T, name string, data []byte) string {
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// fuzzRead opens path with the inferred schema under both row policies,
// reads it to the end and checks the error kinds.
func fuzzRead(t *testing.T, mem memory.Allocator, open func(OnError, *Report) (Reader, error)) {
	for _, policy := range []OnError{Fail, Skip} {
		r, err := open(policy, &Report{})
		if err == nil {
			if r.Schema() == nil {
				t.Fatal("a reader without a schema")
			}
			_, err = drain(mem, r)
			r.Close()
		}
		if err != nil && !errors.Is(err, ErrBadFile) && !errors.Is(err, ErrBadRow) {
			t.Fatalf("error of no kind: %v", err)
		}
		if policy == Skip && errors.Is(err, ErrBadRow) {
			t.Fatalf("a bad row failed the read under Skip: %v", err)
		}
	}
}

func FuzzCSV(f *testing.F) {
	f.Add([]byte("a,b\n1,x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		p := fuzzFile(t, "f.csv", data)
		fuzzRead(t, mem, func(policy OnError, rep *Report) (Reader, error) { return OpenCSV(p, nil, 7, policy, rep) })
	})
}

func FuzzJSONL(f *testing.F) {
	f.Add([]byte(`{"a": 1, "b": "x"}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		p := fuzzFile(t, "f.jsonl", data)
		fuzzRead(t, mem, func(policy OnError, rep *Report) (Reader, error) { return OpenJSONL(p, nil, 7, policy, rep) })
	})
}

// The Arrow and Parquet targets use the Go allocator: after a panic inside
// arrow/go (turned into an error) its buffers are the garbage collector's.
func fuzzArrow(f *testing.F, name string, open func(p string, mem memory.Allocator, policy OnError, rep *Report) (Reader, error)) {
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := memory.NewGoAllocator()
		p := fuzzFile(t, name, data)
		fuzzRead(t, mem, func(policy OnError, rep *Report) (Reader, error) { return open(p, mem, policy, rep) })
	})
}

func openIPC(p string, mem memory.Allocator, policy OnError, rep *Report) (Reader, error) {
	return OpenIPC(p, nil, mem, policy, rep)
}

func FuzzIPCFile(f *testing.F)   { fuzzArrow(f, "f.arrow", openIPC) }
func FuzzIPCStream(f *testing.F) { fuzzArrow(f, "f.stream", openIPC) }
func FuzzParquet(f *testing.F) {
	fuzzArrow(f, "f.parquet", func(p string, mem memory.Allocator, policy OnError, rep *Report) (Reader, error) {
		return OpenParquet(p, nil, 7, mem, policy, rep)
	})
}

// TestWriteFuzzSeeds writes the binary seed corpora from sampleRecord (run
// with TIERFLOW_WRITE_SEEDS=1 after changing it).
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("TIERFLOW_WRITE_SEEDS") == "" {
		t.Skip("set TIERFLOW_WRITE_SEEDS=1 to rewrite testdata/fuzz seeds")
	}
	mem := memory.NewGoAllocator()
	rec := sampleRecord(mem)
	defer rec.Release()
	for target, format := range map[string]string{"FuzzIPCFile": "arrow", "FuzzIPCStream": "stream", "FuzzParquet": "parquet"} {
		data, err := os.ReadFile(writeFormat(t, format, rec, rec))
		if err != nil {
			t.Fatal(err)
		}
		writeSeed(t, target, "sample", data)
		writeSeed(t, target, "truncated", data[:len(data)*2/3])
	}
	for name, text := range map[string]string{
		"types":       "n,x,ok,at,s\n1,1.5,true,2024-01-01 10:00:00,a\n,2,false,,\"\"\n",
		"quotes":      "a,b\n\"x,\"\"y\"\"\",\"multi\nline\"\r\n2,\"open\n",
		"header-only": ",,a,a\n",
		"utf8":        "a\n\xff\xfe\n",
	} {
		writeSeed(t, "FuzzCSV", name, []byte(text))
	}
	for name, text := range map[string]string{
		"types":  `{"id": 1, "v": 0.5, "tag": "a", "on": true, "at": "2024-01-01T00:00:00Z"}` + "\n" + `{"id": null, "v": 2}` + "\n",
		"broken": "{\"a\": 1}\nnot json\n{\"a\": [1, {\"b\": 2}]}\n\xff\n",
	} {
		writeSeed(t, "FuzzJSONL", name, []byte(text))
	}
}

func writeSeed(t *testing.T, target, name string, data []byte) {
	dir := filepath.Join("testdata", "fuzz", target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	body := "go test fuzz v1\n[]byte(" + quoteGo(data) + ")\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func quoteGo(b []byte) string { return strconv.Quote(string(b)) }
