package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// TestAdaptBeforeTheLink is Jellyfish's data adaptation on the engine: the
// plan runs fit-14 (14x14 inputs) over a stream of 28x28 images whose
// model call sits on the hub, behind the edge->hub link. With SET
// planner.adapt_inputs = 'off' the images cross at full size and the
// model call resizes them; by default the edge worker resizes them before
// the link (a quarter of the pixels); with 'uint8' it also sends a byte a
// pixel. The bytes over the link fall by about those ratios, and the
// predictions are the full-size path's: the same for float32 pixels, all
// but a few for bytes (a pixel rounds to 1/255).
func TestAdaptBeforeTheLink(t *testing.T) {
	fashion := fashionDir(t)
	dir := t.TempDir()
	const query = `SELECT s.id, c.label FROM labelled AS s CROSS JOIN LATERAL classify_sized(s.image) AS c(label, score)
WHERE s.id < 600
WITH (ACCURACY >= 80);
`
	for name, body := range map[string]string{"infra.yaml": driftInfra, "catalog.yaml": sizedCatalogOf(fashion, "fit-14"), "query.sql": query} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cat := filepath.Join(dir, "catalog.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: clustertest.LoadInfra(t, dir), Catalog: cat, Heartbeat: 200 * time.Millisecond})
	defer c.Close()

	run := func(mode string) (map[string]string, uint64) {
		t.Helper()
		script := deploy.Script{Filename: filepath.Join(dir, "query.sql"), Source: query, BaseDir: dir, Catalog: cat,
			Planner: map[string]string{deploy.AdaptSetting: mode}}
		csv, info := clustertest.RunCSV(t, ctx, c.Run, script)
		if !strings.HasPrefix(info.Planner, "optimizer") {
			t.Fatalf("%s: placed by %q, want the optimizer", mode, info.Planner)
		}
		placed := info.Placement.Describe()
		adapts := strings.Contains(placed, "adapt image 14x14")
		if want := mode != "off"; adapts != want {
			t.Errorf("%s: placement has an adaptation %v, want %v:\n%s", mode, adapts, want, placed)
		}
		if adapts && !strings.Contains(placed, "adapt image 14x14 "+map[string]string{"resize": "float32", "uint8": "uint8"}[mode]+" @edge e1") {
			t.Errorf("%s: the adaptation must run on the edge worker, before the link:\n%s", mode, placed)
		}
		labels := map[string]string{}
		lines := strings.Split(strings.TrimSpace(csv), "\n")
		for _, l := range lines[1:] {
			id, label, ok := strings.Cut(l, ",")
			if !ok {
				t.Fatalf("%s: row %q", mode, l)
			}
			labels[id] = label
		}
		tb := info.TierBytes()
		t.Logf("%s: %d rows, tier bytes %v", mode, len(labels), tb)
		return labels, tb["edge->hub"]
	}
	full, fullBytes := run("off")
	resized, resizedBytes := run("resize")
	packed, packedBytes := run("uint8")
	if len(full) != 600 || len(resized) != 600 || len(packed) != 600 {
		t.Fatalf("rows %d, %d, %d: want 600 each", len(full), len(resized), len(packed))
	}
	if d := diff(full, resized); len(d) > 0 {
		t.Errorf("resized before the link, %d predictions differ from the model call's resize: %v", len(d), d)
	}
	if d := diff(full, packed); len(d) > 6 {
		t.Errorf("a byte a pixel: %d of 600 predictions differ (want at most 1%%): %v", len(d), d)
	} else {
		t.Logf("a byte a pixel: %d of 600 predictions differ", len(d))
	}
	// 784 -> 196 pixels (4x); 4 -> 1 byte a pixel (4x); ids and framing
	// are what keep the ratios under 4.
	r1, r2 := float64(fullBytes)/float64(resizedBytes), float64(resizedBytes)/float64(packedBytes)
	t.Logf("edge->hub bytes: full %d, resized %d (%.2fx), uint8 %d (%.2fx more)", fullBytes, resizedBytes, r1, packedBytes, r2)
	if r1 < 3.5 || r1 > 4.05 {
		t.Errorf("resizing 28x28 to 14x14 cut the link's bytes %.2fx, want about 4x", r1)
	}
	if r2 < 3 || r2 > 4.05 {
		t.Errorf("a byte a pixel cut the link's bytes another %.2fx, want about 4x", r2)
	}
}

// diff lists the ids whose labels differ, sorted.
func diff(a, b map[string]string) []string {
	var out []string
	for id, l := range a {
		if b[id] != l {
			out = append(out, fmt.Sprintf("%s:%s/%s", id, l, b[id]))
		}
	}
	sort.Strings(out)
	return out
}
