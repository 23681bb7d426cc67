package ingest

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"time"
)

// shape is a kind of message the consumers read: how to make n of them,
// the stream's declaration, the query the engine runs and the decoding a
// bare subscriber does to get the same columns out of a message.
type shape struct {
	name, doc string
	make      func(n int) [][]byte
	// columns is the CREATE STREAM column list.
	columns string
	// query reads some of the columns of the stream named bid.
	query string
	// decode unmarshals a message into a struct of the columns query reads,
	// as a user's subscriber would (encoding/json); false: it did not decode.
	decode func(data []byte) bool
}

// shapes are the messages bench ingest can send: --shape picks one. bid is
// what the targets were set on; small and wide are held out: other fields,
// types and sizes, another key order, a query that reads other columns.
var shapes = []shape{
	{name: "bid", doc: "Nexmark bids, 7 fields, ~180 bytes; the query reads auction and price",
		make:    bids,
		columns: "auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, dateTime TIMESTAMP, extra VARCHAR",
		query:   "SELECT auction, price FROM bid;",
		decode: func(data []byte) bool {
			var v struct {
				Auction int64 `json:"auction"`
				Price   int64 `json:"price"`
			}
			return json.Unmarshal(data, &v) == nil
		}},
	{name: "small", doc: "sensor readings, 5 fields, ~95 bytes; the query reads device, temp and ok",
		make:    readings,
		columns: "seq BIGINT, ts TIMESTAMP, device VARCHAR, temp DOUBLE, ok BOOLEAN",
		query:   "SELECT device, temp, ok FROM bid;",
		decode: func(data []byte) bool {
			var v struct {
				Device string  `json:"device"`
				Temp   float64 `json:"temp"`
				OK     bool    `json:"ok"`
			}
			return json.Unmarshal(data, &v) == nil
		}},
	{name: "wide", doc: "orders, 24 fields, ~0.9 KB, keys in another order than declared; the query reads 4",
		make:    orders,
		columns: wideColumns(),
		query:   "SELECT id, customer, total, status FROM bid;",
		decode: func(data []byte) bool {
			var v struct {
				ID       int64   `json:"id"`
				Customer string  `json:"customer"`
				Total    float64 `json:"total"`
				Status   string  `json:"status"`
			}
			return json.Unmarshal(data, &v) == nil
		}},
}

func shapeNamed(name string) (shape, error) {
	var names []string
	for _, s := range shapes {
		if s.name == name {
			return s, nil
		}
		names = append(names, s.name)
	}
	return shape{}, fmt.Errorf("unknown --shape %q (one of %s)", name, strings.Join(names, ", "))
}

func word(rng *rand.Rand, k int) string {
	b := make([]byte, k)
	for i := range b {
		b[i] = byte('a' + rng.Intn(26))
	}
	return string(b)
}

// bids are n Nexmark bids as JSON objects, in event-time order (10,000 a
// second of event time), fields as bench nexmark's bid.csv.
func bids(n int) [][]byte {
	rng := rand.New(rand.NewSource(1))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	channels := []string{"Google", "Facebook", "Baidu", "Apple"}
	out := make([][]byte, n)
	for i := range out {
		at := base.Add(time.Duration(i) * 100 * time.Microsecond)
		out[i] = fmt.Appendf(nil, `{"auction":%d,"bidder":%d,"price":%d,"channel":%q,"url":"https://www.nexmark.com/%s/%s/item.htm?query=1","dateTime":%q,"extra":%q}`,
			1000+rng.Intn(10000), 1000+rng.Intn(10000), 100+rng.Intn(1_000_000), channels[rng.Intn(len(channels))],
			word(rng, 5), word(rng, 5), at.Format(time.RFC3339Nano), word(rng, 8))
	}
	return out
}

// readings are n small sensor messages, with spaces after the colons (as
// a pretty-printing producer writes them).
func readings(n int) [][]byte {
	rng := rand.New(rand.NewSource(2))
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	out := make([][]byte, n)
	for i := range out {
		at := base.Add(time.Duration(i) * time.Millisecond)
		out[i] = fmt.Appendf(nil, `{"seq": %d, "ts": %q, "device": "dev-%04d", "temp": %.3f, "ok": %t}`,
			i, at.Format(time.RFC3339Nano), rng.Intn(5000), -20+60*rng.Float64(), rng.Intn(10) != 0)
	}
	return out
}

// wideFields are an order's fields as declared; a message writes them in
// another order (wideOrder).
var wideFields = []struct{ name, typ string }{
	{"id", "BIGINT"}, {"customer", "VARCHAR"}, {"email", "VARCHAR"}, {"phone", "VARCHAR"},
	{"street", "VARCHAR"}, {"city", "VARCHAR"}, {"zip", "VARCHAR"}, {"country", "VARCHAR"},
	{"placed", "TIMESTAMP"}, {"shipped", "TIMESTAMP"}, {"status", "VARCHAR"}, {"items", "BIGINT"},
	{"subtotal", "DOUBLE"}, {"tax", "DOUBLE"}, {"shipping", "DOUBLE"}, {"total", "DOUBLE"},
	{"currency", "VARCHAR"}, {"coupon", "VARCHAR"}, {"gift", "BOOLEAN"}, {"note", "VARCHAR"},
	{"agent", "VARCHAR"}, {"channel", "VARCHAR"}, {"priority", "BIGINT"}, {"weight", "DOUBLE"},
}

func wideColumns() string {
	var cols []string
	for _, f := range wideFields {
		cols = append(cols, f.name+" "+f.typ)
	}
	return strings.Join(cols, ", ")
}

// orders are n wide messages (~0.9 KB): their keys in reverse declared
// order, the read columns spread among long unread strings.
func orders(n int) [][]byte {
	rng := rand.New(rand.NewSource(3))
	base := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	statuses := []string{"placed", "paid", "shipped", "delivered", "returned"}
	out := make([][]byte, n)
	order := slices.Clone(wideFields)
	slices.Reverse(order)
	for i := range out {
		at := base.Add(time.Duration(i) * time.Millisecond)
		sub := float64(rng.Intn(100000)) / 100
		vals := map[string]string{
			"id": fmt.Sprint(i), "customer": fmt.Sprintf("%q", word(rng, 12)),
			"email": fmt.Sprintf("%q", word(rng, 10)+"@"+word(rng, 8)+".com"), "phone": fmt.Sprintf(`"+1-%d"`, 2000000000+rng.Intn(999999999)),
			"street": fmt.Sprintf("%q", fmt.Sprint(rng.Intn(999))+" "+word(rng, 14)+" Street"), "city": fmt.Sprintf("%q", word(rng, 9)),
			"zip": fmt.Sprintf(`"%05d"`, rng.Intn(99999)), "country": `"US"`,
			"placed": fmt.Sprintf("%q", at.Format(time.RFC3339Nano)), "shipped": fmt.Sprintf("%q", at.Add(36*time.Hour).Format(time.RFC3339Nano)),
			"status": fmt.Sprintf("%q", statuses[rng.Intn(len(statuses))]), "items": fmt.Sprint(1 + rng.Intn(20)),
			"subtotal": fmt.Sprintf("%.2f", sub), "tax": fmt.Sprintf("%.2f", sub*0.08), "shipping": "4.99",
			"total": fmt.Sprintf("%.2f", sub*1.08+4.99), "currency": `"USD"`, "coupon": `null`,
			"gift": fmt.Sprint(rng.Intn(5) == 0), "note": fmt.Sprintf("%q", strings.Repeat(word(rng, 9)+" ", 40)),
			"agent": fmt.Sprintf("%q", "Mozilla/5.0 (X11; Linux x86_64) "+word(rng, 20)), "channel": `"web"`,
			"priority": fmt.Sprint(rng.Intn(3)), "weight": fmt.Sprintf("%.3f", rng.Float64()*30),
		}
		b := []byte{'{'}
		for k, f := range order {
			if k > 0 {
				b = append(b, ',')
			}
			b = fmt.Appendf(b, "%q:%s", f.name, vals[f.name])
		}
		out[i] = append(b, '}')
	}
	return out
}
