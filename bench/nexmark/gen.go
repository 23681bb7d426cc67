// Package nexmark is the Nexmark benchmark (the one Flink, Arroyo and
// RisingWave publish) on tierflow: a generator with Nexmark's proportions,
// fields and id/time relations (gen.go), the queries as close to
// nexmark-flink's text as tierflow takes them (queries.go), and `tierflow
// bench nexmark`, events per second per query (nexmark.go). The tests check
// each query's answer against one derived from the generated events.
package nexmark

import (
	"bufio"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Nexmark's shape (nexmark-flink's GeneratorConfig defaults): of every 50
// events 1 is a new person, 3 are new auctions and 46 are bids; ids start
// at 1000; auctions are in 5 categories from 10; a bid goes to one of the
// last few auctions (hot) most of the time, else to any open auction, by a
// recent bidder (hot) or any person.
const (
	proportionDenominator = 50
	personProportion      = 1
	auctionProportion     = 3
	firstPersonID         = 1000
	firstAuctionID        = 1000
	firstCategoryID       = 10
	numCategories         = 5
	hotAuctionRatio       = 2 // 1 in 2 bids is on a hot auction
	hotBidderRatio        = 4 // 1 in 4 bids is by a hot bidder
	hotSpan               = 10
)

// Config sizes a generated stream.
type Config struct {
	Events int   // events in all (persons, auctions and bids)
	Seed   int64 // the same seed gives the same files
	// Gap is the event time between two events (default 100 µs: 10,000
	// events a second of event time).
	Gap time.Duration
	// AuctionLength is how long an auction stays open (default 200 events'
	// time); bids go to open auctions.
	AuctionLength time.Duration
}

// Base is the first event's time.
var Base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Counts are how many events of each kind a generation wrote.
type Counts struct{ Persons, Auctions, Bids int }

// Generate writes person.csv, auction.csv and bid.csv under dir, each in
// event-time order, and side_input.csv (q13's table).
func Generate(dir string, c Config) (Counts, error) {
	if c.Gap <= 0 {
		c.Gap = 100 * time.Microsecond
	}
	if c.AuctionLength <= 0 {
		c.AuctionLength = 200 * c.Gap
	}
	rng := rand.New(rand.NewSource(c.Seed))
	var counts Counts
	files := map[string]*bufio.Writer{}
	var closers []*os.File
	defer func() {
		for _, f := range closers {
			f.Close()
		}
	}()
	for name, header := range map[string]string{
		"person":  "id,name,emailAddress,creditCard,city,state,dateTime,extra",
		"auction": "id,itemName,description,initialBid,reserve,dateTime,expires,seller,category,extra",
		"bid":     "auction,bidder,price,channel,url,dateTime,extra",
	} {
		f, err := os.Create(filepath.Join(dir, name+".csv"))
		if err != nil {
			return counts, err
		}
		closers = append(closers, f)
		w := bufio.NewWriterSize(f, 1<<20)
		files[name] = w
		fmt.Fprintln(w, header)
	}
	const ts = "2006-01-02 15:04:05.000000"
	// Open auctions, by id, with their end.
	type open struct {
		id  int64
		end time.Time
	}
	var auctions []open
	nextPerson, nextAuction := int64(firstPersonID), int64(firstAuctionID)
	for i := 0; i < c.Events; i++ {
		at := Base.Add(time.Duration(i) * c.Gap)
		slot := i % proportionDenominator
		switch {
		case slot < personProportion:
			id := nextPerson
			nextPerson++
			counts.Persons++
			fmt.Fprintf(files["person"], "%d,%s,%s,%s,%s,%s,%s,%s\n", id, personName(rng), email(rng), creditCard(rng),
				pick(rng, cities), pick(rng, states), at.Format(ts), extra(rng))
		case slot < personProportion+auctionProportion:
			id := nextAuction
			nextAuction++
			counts.Auctions++
			seller := lastPerson(rng, nextPerson)
			initial := price(rng)
			expires := at.Add(c.AuctionLength/2 + time.Duration(rng.Int63n(int64(c.AuctionLength))))
			auctions = append(auctions, open{id, expires})
			fmt.Fprintf(files["auction"], "%d,%s,%s,%d,%d,%s,%s,%d,%d,%s\n", id, word(rng, 8), word(rng, 20), initial,
				initial+price(rng), at.Format(ts), expires.Format(ts), seller, firstCategoryID+rng.Intn(numCategories), extra(rng))
		default:
			// Auctions whose end passed take no more bids.
			k := 0
			for _, a := range auctions {
				if a.end.After(at) {
					auctions[k] = a
					k++
				}
			}
			auctions = auctions[:k]
			if len(auctions) == 0 {
				continue
			}
			var auction int64
			if rng.Intn(hotAuctionRatio) == 0 {
				auction = auctions[max(0, len(auctions)-1-rng.Intn(hotSpan))].id
			} else {
				auction = auctions[rng.Intn(len(auctions))].id
			}
			var bidder int64
			if rng.Intn(hotBidderRatio) == 0 {
				bidder = max(firstPersonID, nextPerson-1-int64(rng.Intn(hotSpan)))
			} else {
				bidder = lastPerson(rng, nextPerson)
			}
			counts.Bids++
			fmt.Fprintf(files["bid"], "%d,%d,%d,%s,%s,%s,%s\n", auction, bidder, price(rng), pick(rng, channels), url(rng), at.Format(ts), extra(rng))
		}
	}
	for _, w := range files {
		if err := w.Flush(); err != nil {
			return counts, err
		}
	}
	for _, f := range closers {
		if err := f.Close(); err != nil {
			return counts, err
		}
	}
	closers = nil
	return counts, writeSideInput(dir)
}

// sideInputKeys is how many rows Nexmark's side input has (its
// side_input_gen.sh: --num 10000).
const sideInputKeys = 10_000

// writeSideInput writes side_input.csv, the table q13 joins bids with:
// each key from 0 with its value, the key as text.
func writeSideInput(dir string) error {
	var b strings.Builder
	b.WriteString("key,value\n")
	for k := 0; k < sideInputKeys; k++ {
		fmt.Fprintf(&b, "%d,%d\n", k, k)
	}
	return os.WriteFile(filepath.Join(dir, "side_input.csv"), []byte(b.String()), 0o644)
}

// lastPerson is a person created so far (the first one when none is yet).
func lastPerson(rng *rand.Rand, next int64) int64 {
	if next <= firstPersonID {
		return firstPersonID
	}
	return firstPersonID + rng.Int63n(next-firstPersonID)
}

// price is Nexmark's: 10^(6 u) * 100 cents, u uniform.
func price(rng *rand.Rand) int64 {
	return int64(math.Pow(10, rng.Float64()*6) * 100)
}

var (
	firstNames = []string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	lastNames  = []string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
	cities     = []string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"}
	states     = []string{"AZ", "CA", "ID", "OR", "WA", "WY"}
	channels   = []string{"Google", "Facebook", "Baidu", "Apple"}
)

func pick(rng *rand.Rand, from []string) string { return from[rng.Intn(len(from))] }

func personName(rng *rand.Rand) string { return pick(rng, firstNames) + " " + pick(rng, lastNames) }

func email(rng *rand.Rand) string { return word(rng, 7) + "@" + word(rng, 5) + ".com" }

func creditCard(rng *rand.Rand) string {
	return fmt.Sprintf("%04d %04d %04d %04d", rng.Intn(10000), rng.Intn(10000), rng.Intn(10000), rng.Intn(10000))
}

// url is Nexmark's bid url: a channel's page, with a query string on some
// (q3 of Flink's set reads its path, q21 its channel_id).
func url(rng *rand.Rand) string {
	u := "https://www.nexmark.com/" + word(rng, 5) + "/" + word(rng, 5) + "/" + word(rng, 5) + "/item.htm?query=1"
	if rng.Intn(10) > 0 {
		u += "&channel_id=" + fmt.Sprint(rng.Intn(1<<31))
	}
	return u
}

func word(rng *rand.Rand, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteByte(byte('a' + rng.Intn(26)))
	}
	return b.String()
}

// extra is a short filler, as Nexmark's (its length is a knob there).
func extra(rng *rand.Rand) string { return word(rng, 8) }
