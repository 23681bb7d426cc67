package nexmark

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Query is one Nexmark query as tierflow runs it.
type Query struct {
	Name string
	// Text is the query after the streams' DDL: nexmark-flink's, with its
	// one `datagen` source split into the person, auction and bid streams.
	Text string
	// Form says how it differs from nexmark-flink's text, when it does.
	Form string
	// ProcTime: it answers by processing time (PROCTIME()), so its answer
	// depends on when rows pass, not on the data alone: the same every run
	// only with a stepped clock (Options.Clock, TestQ12).
	ProcTime bool
}

// Queries are the Nexmark queries tierflow runs in Flink's own form, and
// those that run only in another one (Form says which).
var Queries = []Query{
	{Name: "q0", Text: `SELECT auction, bidder, price, dateTime, extra FROM bid;`},
	{Name: "q1", Text: `SELECT auction, bidder, 0.908 * price AS price, dateTime, extra FROM bid;`},
	{Name: "q2", Text: `SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0;`},
	{Name: "q3", Text: `SELECT
    P.name, P.city, P.state, A.id
FROM
    auction AS A INNER JOIN person AS P on A.seller = P.id
WHERE
    A.category = 10 and (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA');`},
	{Name: "q4", Text: `SELECT
    Q.category,
    AVG(Q.final)
FROM (
    SELECT MAX(B.price) AS final, A.category
    FROM auction A, bid B
    WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
    GROUP BY A.id, A.category
) Q
GROUP BY Q.category;`},
	{Name: "q5", Form: windowForm, Text: `SELECT AuctionBids.auction, AuctionBids.num
 FROM (
   SELECT auction, count(*) AS num, window_start AS starttime, window_end AS endtime
   FROM bid
   GROUP BY auction, HOP(dateTime, INTERVAL '10' SECOND, INTERVAL '2' SECOND)
 ) AS AuctionBids
 JOIN (
   SELECT max(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime
   FROM (
     SELECT count(*) AS num, window_start AS starttime, window_end AS endtime
     FROM bid
     GROUP BY auction, HOP(dateTime, INTERVAL '10' SECOND, INTERVAL '2' SECOND)
     ) AS CountBids
   GROUP BY CountBids.starttime, CountBids.endtime
 ) AS MaxBids
 ON AuctionBids.starttime = MaxBids.starttime AND
    AuctionBids.endtime = MaxBids.endtime AND
    AuctionBids.num >= MaxBids.maxn;`},
	{Name: "q6", Form: q6Form, Text: `SELECT
    Q.seller,
    AVG(Q.final) OVER
        (PARTITION BY Q.seller ORDER BY Q.expires ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) AS avg_price
FROM (
    SELECT MAX(B.price) AS final, A.seller, A.expires
    FROM auction AS A, bid AS B
    WHERE A.id = B.auction and B.dateTime between A.dateTime and A.expires
    GROUP BY A.id, A.seller, A.expires
) AS Q;`},
	{Name: "q7", Form: windowForm, Text: `SELECT B.auction, B.price, B.bidder, B.dateTime, B.extra
from bid B
JOIN (
  SELECT MAX(price) AS maxprice, window_end as dateTime
  FROM bid
  GROUP BY TUMBLE(dateTime, INTERVAL '10' SECOND)
) B1
ON B.price = B1.maxprice
WHERE B.dateTime BETWEEN B1.dateTime  - INTERVAL '10' SECOND AND B1.dateTime;`},
	{Name: "q8", Form: windowForm, Text: `SELECT P.id, P.name, P.starttime
FROM (
  SELECT id, name, window_start AS starttime, window_end AS endtime
  FROM person
  GROUP BY id, name, TUMBLE(dateTime, INTERVAL '10' SECOND)
) P
JOIN (
  SELECT seller, window_start AS starttime, window_end AS endtime
  FROM auction
  GROUP BY seller, TUMBLE(dateTime, INTERVAL '10' SECOND)
) A
ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime;`},
	{Name: "q9", Text: `SELECT
    id, itemName, description, initialBid, reserve, dateTime, expires, seller, category, extra,
    auction, bidder, price, bid_dateTime, bid_extra
FROM (
   SELECT A.*, B.auction, B.bidder, B.price, B.dateTime AS bid_dateTime, B.extra AS bid_extra,
     ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.dateTime ASC) AS rownum
   FROM auction A, bid B
   WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
)
WHERE rownum <= 1;`},
	{Name: "q10", Form: "its rows discarded (Flink writes them to files partitioned by dt, hm)", Text: `SELECT auction, bidder, price, dateTime, extra, DATE_FORMAT(dateTime, 'yyyy-MM-dd'), DATE_FORMAT(dateTime, 'HH:mm')
FROM bid;`},
	{Name: "q11", Form: "SESSION_START/SESSION_END as window_start/window_end", Text: `SELECT
    B.bidder,
    count(*) as bid_count,
    window_start as starttime,
    window_end as endtime
FROM bid B
GROUP BY B.bidder, SESSION(B.dateTime, INTERVAL '10' SECOND);`},
	{Name: "q12", Form: "window_start/window_end for TUMBLE_START/TUMBLE_END", ProcTime: true, Text: `SELECT
    B.bidder,
    count(*) as bid_count,
    window_start as starttime,
    window_end as endtime
FROM (SELECT *, PROCTIME() as p_time FROM bid) B
GROUP BY B.bidder, TUMBLE(B.p_time, INTERVAL '10' SECOND);`},
	{Name: "q13", Form: "side_input as a TABLE (Flink's FOR SYSTEM_TIME AS OF PROCTIME() lookup join is a stream-table join)", Text: `SELECT
    B.auction,
    B.bidder,
    B.price,
    B.dateTime,
    S.value
FROM bid B
JOIN side_input S
ON mod(B.auction, 10000) = S.key;`},
	{Name: "q14", Form: "the count_char UDF as length(extra) - length(replace(extra, 'c', ''))", Text: `SELECT
    auction,
    bidder,
    0.908 * price as price,
    CASE
        WHEN HOUR(dateTime) >= 8 AND HOUR(dateTime) <= 18 THEN 'dayTime'
        WHEN HOUR(dateTime) <= 6 OR HOUR(dateTime) >= 20 THEN 'nightTime'
        ELSE 'otherTime'
    END AS bidTimeType,
    dateTime,
    extra,
    length(extra) - length(replace(extra, 'c', '')) AS c_counts
FROM bid
WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000;`},
	{Name: "q15", Text: `SELECT
     DATE_FORMAT(dateTime, 'yyyy-MM-dd') as day,
     count(*) AS total_bids,
     count(*) filter (where price < 10000) AS rank1_bids,
     count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
     count(*) filter (where price >= 1000000) AS rank3_bids,
     count(distinct bidder) AS total_bidders,
     count(distinct bidder) filter (where price < 10000) AS rank1_bidders,
     count(distinct bidder) filter (where price >= 10000 and price < 1000000) AS rank2_bidders,
     count(distinct bidder) filter (where price >= 1000000) AS rank3_bidders,
     count(distinct auction) AS total_auctions,
     count(distinct auction) filter (where price < 10000) AS rank1_auctions,
     count(distinct auction) filter (where price >= 10000 and price < 1000000) AS rank2_auctions,
     count(distinct auction) filter (where price >= 1000000) AS rank3_auctions
FROM bid
GROUP BY DATE_FORMAT(dateTime, 'yyyy-MM-dd');`},
	{Name: "q16", Text: `SELECT
    channel,
    DATE_FORMAT(dateTime, 'yyyy-MM-dd') as day,
    max(DATE_FORMAT(dateTime, 'HH:mm')) as minute,
    count(*) AS total_bids,
    count(*) filter (where price < 10000) AS rank1_bids,
    count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
    count(*) filter (where price >= 1000000) AS rank3_bids,
    count(distinct bidder) AS total_bidders,
    count(distinct bidder) filter (where price < 10000) AS rank1_bidders,
    count(distinct bidder) filter (where price >= 10000 and price < 1000000) AS rank2_bidders,
    count(distinct bidder) filter (where price >= 1000000) AS rank3_bidders,
    count(distinct auction) AS total_auctions,
    count(distinct auction) filter (where price < 10000) AS rank1_auctions,
    count(distinct auction) filter (where price >= 10000 and price < 1000000) AS rank2_auctions,
    count(distinct auction) filter (where price >= 1000000) AS rank3_auctions
FROM bid
GROUP BY channel, DATE_FORMAT(dateTime, 'yyyy-MM-dd');`},
	{Name: "q17", Text: `SELECT
     auction,
     DATE_FORMAT(dateTime, 'yyyy-MM-dd') as day,
     count(*) AS total_bids,
     count(*) filter (where price < 10000) AS rank1_bids,
     count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
     count(*) filter (where price >= 1000000) AS rank3_bids,
     min(price) AS min_price,
     max(price) AS max_price,
     avg(price) AS avg_price,
     sum(price) AS sum_price
FROM bid
GROUP BY auction, DATE_FORMAT(dateTime, 'yyyy-MM-dd');`},
	{Name: "q18", Text: `SELECT auction, bidder, price, channel, url, dateTime, extra
 FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY dateTime DESC) AS rank_number
       FROM bid)
 WHERE rank_number <= 1;`},
	{Name: "q19", Text: `SELECT * FROM
(SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number FROM bid)
WHERE rank_number <= 10;`},
	{Name: "q20", Text: `SELECT
    auction, bidder, price, channel, url, B.dateTime, B.extra,
    itemName, description, initialBid, reserve, A.dateTime, expires, seller, category, A.extra
FROM
    bid AS B INNER JOIN auction AS A on B.auction = A.id
WHERE A.category = 10;`},
	{Name: "q21", Text: `SELECT
    auction, bidder, price, channel,
    CASE
        WHEN lower(channel) = 'apple' THEN '0'
        WHEN lower(channel) = 'google' THEN '1'
        WHEN lower(channel) = 'facebook' THEN '2'
        WHEN lower(channel) = 'baidu' THEN '3'
        ELSE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2)
        END
    AS channel_id FROM bid
    where REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) is not null or
          lower(channel) in ('apple', 'google', 'facebook', 'baidu');`},
	{Name: "q22", Text: `SELECT
    auction, bidder, price, channel,
    SPLIT_INDEX(url, '/', 3) as dir1,
    SPLIT_INDEX(url, '/', 4) as dir2,
    SPLIT_INDEX(url, '/', 5) as dir3 FROM bid;`},
}

// Keyed are the queries `bench nexmark --processes` spreads over workers:
// aggregations keyed by an event column, whose instances each take the
// keys a hash sends them (the joins q4, q5 and q7 join them when they run in
// Flink's form).
var Keyed = []Query{
	{Name: "q5-bids", Form: "q5's AuctionBids: bids per auction in each HOP window", Text: `SELECT auction, COUNT(*) AS num, window_start AS starttime, window_end AS endtime
FROM bid GROUP BY auction, HOP(dateTime, INTERVAL '10' SECOND, INTERVAL '2' SECOND);`},
	{Name: "q7-max", Form: "q7's inner part: the highest bid per auction in each 10 s window", Text: `SELECT auction, MAX(price) AS maxprice, window_end AS endtime
FROM bid GROUP BY auction, TUMBLE(dateTime, INTERVAL '10' SECOND);`},
	{Name: "q-bidder", Form: "a q15/q16-like GROUP BY on a stream: bids, total and highest per bidder", Text: `SELECT bidder, COUNT(*) AS bids, SUM(price) AS total, MAX(price) AS highest
FROM bid GROUP BY bidder;`},
}

// windowForm is the Form of the queries over windows: nexmark-flink's
// window table functions (FROM TABLE(HOP(TABLE bid, DESCRIPTOR(dateTime),
// slide, size)) ... GROUP BY window_start, window_end) are written as
// tierflow's group windows (GROUP BY HOP(dateTime, size, slide), which
// gives window_start and window_end); the joins are Flink's.
const windowForm = "window TVFs as GROUP BY HOP/TUMBLE (no TVFs in the grammar)"

// q6Form says how q6 differs: nexmark-flink's text does not run in Flink
// (its OVER cannot take the retractions of the inner aggregation, and an
// older text selects B.dateTime, which its GROUP BY drops). Here the inner
// GROUP BY also groups by A.expires, a time attribute of the join (the
// BETWEEN lets an auction go when the watermark passes its expires), so each
// auction's winning price goes out once, when the auction closes, and the
// OVER averages each seller's closed auctions in the order they closed.
const q6Form = "GROUP BY A.id, A.seller, A.expires: each auction answers when it closes, ordered by expires (Flink cannot run its text)"

// Lookup finds a query by name.
func Lookup(name string) (Query, bool) {
	for _, q := range append(Queries[:len(Queries):len(Queries)], Keyed...) {
		if q.Name == name {
			return q, true
		}
	}
	return Query{}, false
}

// Names lists the queries' names.
func Names() []string {
	out := make([]string, len(Queries))
	for i, q := range Queries {
		out[i] = q.Name
	}
	return out
}

// DDL declares the three streams over dir's files, and q13's side_input
// table.
func DDL(dir string) string {
	return ddl(func(name string) string { return filepath.Join(dir, name+".csv") })
}

// PartitionedDDL declares the streams over the parts Partition wrote into
// dir, a glob each: every part is a partition of its stream (q13's table
// is the one file).
func PartitionedDDL(dir string) string {
	return ddl(func(name string) string { return filepath.Join(dir, name+"-*.csv") })
}

func ddl(file func(name string) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE STREAM person (id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR, state VARCHAR, dateTime TIMESTAMP, extra VARCHAR) FROM FILE '%s' FORMAT CSV;\n", file("person"))
	const auction = "(id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT, dateTime TIMESTAMP, expires TIMESTAMP, seller BIGINT, category BIGINT, extra VARCHAR)"
	fmt.Fprintf(&b, "CREATE STREAM auction %s FROM FILE '%s' FORMAT CSV;\n", auction, file("auction"))
	// A table is read whole, never split: Partition copies it as it is.
	fmt.Fprintf(&b, "CREATE TABLE side_input (key BIGINT, value VARCHAR) FROM FILE '%s' FORMAT CSV;\n", filepath.Join(filepath.Dir(file("bid")), "side_input.csv"))
	fmt.Fprintf(&b, "CREATE STREAM bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, dateTime TIMESTAMP, extra VARCHAR) FROM FILE '%s' FORMAT CSV;\n", file("bid"))
	return b.String()
}
