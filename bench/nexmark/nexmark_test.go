package nexmark

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/rel"
)

// The generated events every test reads: 20,000 events (400 persons, 1,200
// auctions, 18,400 bids less those when no auction is open), made once.
var (
	dataOnce sync.Once
	dataDir  string
	dataErr  error
)

// partitioned is data(t) and the same events split into 3 partitions per
// stream (Partition), for the tests that run a query over instances.
func partitioned(t *testing.T) (dir, parts string) {
	t.Helper()
	dir = data(t)
	parts, err := Partition(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	return dir, parts
}

func data(t *testing.T) string {
	t.Helper()
	dataOnce.Do(func() {
		dataDir, dataErr = os.MkdirTemp("", "nexmark")
		if dataErr == nil {
			_, dataErr = Generate(dataDir, Config{Events: 20_000, Seed: 7})
		}
	})
	if dataErr != nil {
		t.Fatal(dataErr)
	}
	return dataDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if dataDir != "" {
		os.RemoveAll(dataDir)
	}
	os.Exit(code)
}

// bidRow is one generated bid.
type bidRow struct {
	auction, bidder, price int64
	channel, url, extra    string
	at                     time.Time
}

type auctionRow struct {
	id, initialBid, reserve, seller, category int64
	itemName, description, extra              string
	at, expires                               time.Time
}

func readCSV(t *testing.T, name string) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(data(t), name+".csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows[1:]
}

func num(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic(err)
	}
	return n
}

func when(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04:05.000000", s)
	if err != nil {
		panic(err)
	}
	return t
}

func bids(t *testing.T) []bidRow {
	var out []bidRow
	for _, r := range readCSV(t, "bid") {
		out = append(out, bidRow{num(r[0]), num(r[1]), num(r[2]), r[3], r[4], r[6], when(r[5])})
	}
	return out
}

func auctions(t *testing.T) []auctionRow {
	var out []auctionRow
	for _, r := range readCSV(t, "auction") {
		out = append(out, auctionRow{id: num(r[0]), itemName: r[1], description: r[2], initialBid: num(r[3]), reserve: num(r[4]),
			at: when(r[5]), expires: when(r[6]), seller: num(r[7]), category: num(r[8]), extra: r[9]})
	}
	return out
}

// run runs the named query (its rows kept) with batches of batch rows.
func run(t *testing.T, name string, batch int) [][]any {
	t.Helper()
	q, ok := Lookup(name)
	if !ok {
		t.Fatalf("no query %s", name)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	res, err := Run(context.Background(), data(t), q, Options{Allocator: mem, Keep: true, BatchSize: batch})
	if err != nil {
		t.Fatal(err)
	}
	return res.Rows
}

// table applies a changelog (op first; rel.ApplyChangelog) and returns
// the rows left, as text of the columns cols picks, sorted.
func table(t *testing.T, log [][]any, cols ...int) []string {
	t.Helper()
	rows, err := rel.ApplyChangelog(log)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		var pick []any
		for _, c := range cols {
			pick = append(pick, r[c])
		}
		out = append(out, fmt.Sprint(pick...))
	}
	sort.Strings(out)
	return out
}

func same(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") == strings.Join(want, "\n") {
		return
	}
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Fatalf("%s: %d rows, want %d; first difference at %d: %q, want %q", what, len(got), len(want), i, g, w)
		}
	}
}

func ts(t time.Time) string { return fmt.Sprint(t) }

// q0 passes every bid through.
func TestQ0(t *testing.T) {
	var want []string
	for _, b := range bids(t) {
		want = append(want, fmt.Sprint(b.auction, b.bidder, b.price, ts(b.at), b.extra))
	}
	sort.Strings(want)
	var got []string
	for _, r := range run(t, "q0", 0) {
		got = append(got, fmt.Sprint(r[0], r[1], r[2], ts(r[3].(time.Time)), r[4]))
	}
	sort.Strings(got)
	same(t, "q0", got, want)
}

// q2 keeps the bids on auctions whose id is a multiple of 123.
func TestQ2(t *testing.T) {
	var want []string
	for _, b := range bids(t) {
		if b.auction%123 == 0 {
			want = append(want, fmt.Sprint(b.auction, b.price))
		}
	}
	sort.Strings(want)
	if len(want) == 0 {
		t.Fatal("the generated bids have no auction id divisible by 123")
	}
	var got []string
	for _, r := range run(t, "q2", 0) {
		got = append(got, fmt.Sprint(r...))
	}
	sort.Strings(got)
	same(t, "q2", got, want)
}

// q18 is each bidder's last bid on each auction: the changelog leaves, per
// (bidder, auction), the bid with the latest dateTime.
func TestQ18(t *testing.T) {
	last := map[[2]int64]bidRow{}
	for _, b := range bids(t) {
		k := [2]int64{b.bidder, b.auction}
		if l, ok := last[k]; !ok || b.at.After(l.at) {
			last[k] = b
		}
	}
	var want []string
	for _, b := range last {
		want = append(want, fmt.Sprint(b.auction, b.bidder, ts(b.at)))
	}
	sort.Strings(want)
	for _, batch := range []int{0, 97} {
		log := run(t, "q18", batch)
		for i := range log {
			log[i][6] = ts(log[i][6].(time.Time))
		}
		same(t, fmt.Sprintf("q18 (batch %d)", batch), table(t, log, 0, 1, 5), want)
		if batch == 97 && len(log) <= len(want) {
			t.Fatalf("q18 in batches of 97: %d changes for %d rows: later bids should update earlier ones", len(log), len(want))
		}
	}
}

// q19 is each auction's ten highest bids: the changelog leaves, per
// auction, ranks 1 to 10 (or as many bids as it had) with the highest
// prices (compared as prices, so a tie may leave either bid).
func TestQ19(t *testing.T) {
	prices := map[int64][]int64{}
	for _, b := range bids(t) {
		prices[b.auction] = append(prices[b.auction], b.price)
	}
	var want []string
	for a, ps := range prices {
		sort.Slice(ps, func(i, j int) bool { return ps[i] > ps[j] })
		for i := 0; i < 10 && i < len(ps); i++ {
			want = append(want, fmt.Sprint(a, ps[i], int64(i+1)))
		}
	}
	sort.Strings(want)
	log := run(t, "q19", 500)
	// The columns: op, then bid's seven and rank_number.
	same(t, "q19", table(t, log, 0, 2, 7), want)
}

// q9 is each auction's winning bid: the highest (then earliest) bid made
// while it was open.
func TestQ9(t *testing.T) {
	byID, best := winningBids(t)
	var want []string
	for id, b := range best {
		want = append(want, fmt.Sprint(id, byID[id].seller, b.bidder, b.price, ts(b.at)))
	}
	sort.Strings(want)
	log := run(t, "q9", 500)
	for i := range log {
		log[i][14] = ts(log[i][14].(time.Time))
	}
	// op, then id .. extra (10), auction, bidder, price, bid_dateTime, bid_extra.
	same(t, "q9", table(t, log, 0, 7, 11, 12, 13), want)
}

// winningBids are the auctions by id and each auction's winning bid: the
// highest (then earliest) bid made while it was open (q6, q9).
func winningBids(t *testing.T) (map[int64]auctionRow, map[int64]bidRow) {
	byID := map[int64]auctionRow{}
	for _, a := range auctions(t) {
		byID[a.id] = a
	}
	best := map[int64]bidRow{}
	for _, b := range bids(t) {
		a, ok := byID[b.auction]
		if !ok || b.at.Before(a.at) || b.at.After(a.expires) {
			continue
		}
		if w, ok := best[a.id]; !ok || b.price > w.price || b.price == w.price && b.at.Before(w.at) {
			best[a.id] = b
		}
	}
	return byID, best
}
