package tpch

import (
	"strconv"
	"time"
)

// The row functions follow the specification's column definitions (4.2.3).
// Money is in cents, dates in days since 1970-01-01.

func day(y int, m time.Month, d int) int64 {
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400
}

var (
	startDate   = day(1992, 1, 1)
	endDate     = day(1998, 12, 31)
	currentDate = day(1995, 6, 17)
	// lastOrder leaves room for an order's lines to ship and arrive by
	// endDate: 121 days to ship plus 30 to arrive.
	lastOrder = endDate - 151
)

// text is a comment: a substring of the pseudo text whose length is uniform
// in [lo, hi] (the specification's "text string [lo, hi]").
func (g *generator) comment(r *rng, lo, hi int) string {
	n := int(r.between(int64(lo), int64(hi)))
	off := int(r.next() % uint64(len(g.text)-n))
	return g.text[off : off+n]
}

// vstring is a "random v-string [lo, hi]": random alphanumeric characters.
const vchars = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ, "

func vstring(r *rng, lo, hi int) string {
	n := int(r.between(int64(lo), int64(hi)))
	b := make([]byte, n)
	for i := range b {
		b[i] = vchars[r.next()%uint64(len(vchars))]
	}
	return string(b)
}

// phone is a phone number whose country code is the nation's (4.2.2.9).
func phone(r *rng, nation int64) string {
	b := make([]byte, 0, 15)
	b = strconv.AppendInt(b, nation+10, 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, r.between(100, 999), 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, r.between(100, 999), 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, r.between(1000, 9999), 10)
	return string(b)
}

// keyName is "Supplier#000000042" and the like: 9 digits, zero-padded.
func keyName(prefix string, key int64) string {
	s := strconv.FormatInt(key, 10)
	b := make([]byte, 0, len(prefix)+9)
	b = append(b, prefix...)
	for i := len(s); i < 9; i++ {
		b = append(b, '0')
	}
	return string(append(b, s...))
}

func (c *chunk) int(col int, v int64)             { c.ints[col] = append(c.ints[col], v) }
func (c *chunk) str(col int, v string)            { c.strs[col] = append(c.strs[col], v) }
func (c *chunk) done()                            { c.n++ }
func (g *generator) rng(t tableID, row int64) rng { return rowRng(g.o.Seed, t, row) }

func fillRegion(g *generator, row int64, c *chunk) {
	r := g.rng(tableRegion, row)
	c.int(0, row)
	c.str(1, regions[row])
	c.str(2, g.comment(&r, 31, 115))
	c.done()
}

func fillNation(g *generator, row int64, c *chunk) {
	r := g.rng(tableNation, row)
	c.int(0, row)
	c.str(1, nations[row].name)
	c.int(2, int64(nations[row].region))
	c.str(3, g.comment(&r, 31, 114))
	c.done()
}

// Ten suppliers in 10,000 carry the Better Business Bureau's words in their
// comment, half of them complaints (Q16 excludes those).
const bbbPer10k = 10

func fillSupplier(g *generator, row int64, c *chunk) {
	r := g.rng(tableSupplier, row)
	key := row + 1
	nation := r.between(0, 24)
	c.int(0, key)
	c.str(1, keyName("Supplier#", key))
	c.str(2, vstring(&r, 10, 40))
	c.int(3, nation)
	c.str(4, phone(&r, nation))
	c.int(5, r.between(-99999, 999999))
	cm := g.comment(&r, 25, 100)
	if r.between(1, 10000) <= bbbPer10k {
		cm = betterBusinessBureau(&r, cm)
	}
	c.str(6, cm)
	c.done()
}

// betterBusinessBureau writes "Customer ...Complaints" or "Customer
// ...Recommends" over part of a comment, at a random place.
func betterBusinessBureau(r *rng, cm string) string {
	tail := "Complaints"
	if r.next()%2 == 0 {
		tail = "Recommends"
	}
	const head = "Customer "
	room := len(cm) - len(head) - len(tail)
	gap := int(r.between(0, int64(room)))
	at := int(r.between(0, int64(room-gap)))
	return cm[:at] + head + cm[at+len(head):at+len(head)+gap] + tail + cm[at+len(head)+gap+len(tail):]
}

func fillCustomer(g *generator, row int64, c *chunk) {
	r := g.rng(tableCustomer, row)
	key := row + 1
	nation := r.between(0, 24)
	c.int(0, key)
	c.str(1, keyName("Customer#", key))
	c.str(2, vstring(&r, 10, 40))
	c.int(3, nation)
	c.str(4, phone(&r, nation))
	c.int(5, r.between(-99999, 999999))
	c.str(6, segments.pick(&r))
	c.str(7, g.comment(&r, 29, 116))
	c.done()
}

// retailPrice is P_RETAILPRICE in cents, a function of the key (4.2.3) that
// lineitem's prices use too.
func retailPrice(partkey int64) int64 {
	return 90000 + (partkey/10)%20001 + 100*(partkey%1000)
}

func fillPart(g *generator, row int64, c *chunk) {
	r := g.rng(tablePart, row)
	key := row + 1
	c.int(0, key)
	c.str(1, partName(&r))
	m := r.between(1, 5)
	c.str(2, "Manufacturer#"+strconv.FormatInt(m, 10))
	c.str(3, "Brand#"+strconv.FormatInt(m, 10)+strconv.FormatInt(r.between(1, 5), 10))
	c.str(4, typeSyllable1.pick(&r)+" "+typeSyllable2.pick(&r)+" "+typeSyllable3.pick(&r))
	c.int(5, r.between(1, 50))
	c.str(6, containerSyllable1.pick(&r)+" "+containerSyllable2.pick(&r))
	c.int(7, retailPrice(key))
	c.str(8, g.comment(&r, 5, 22))
	c.done()
}

// partName is five distinct colors.
func partName(r *rng) string {
	var picked [5]int
	b := make([]byte, 0, 48)
	for i := 0; i < 5; i++ {
	again:
		x := int(r.next() % uint64(len(colors)))
		for _, p := range picked[:i] {
			if p == x {
				goto again
			}
		}
		picked[i] = x
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, colors[x]...)
	}
	return string(b)
}

// partSupplier is the i-th (0..3) supplier of a part (4.2.3): spread so that
// every supplier supplies parts evenly.
func (g *generator) partSupplier(partkey, i int64) int64 {
	s := g.sc.suppliers
	return (partkey+i*(s/4+(partkey-1)/s))%s + 1
}

func fillPartsupp(g *generator, row int64, c *chunk) {
	r := g.rng(tablePartsupp, row)
	part := row/4 + 1
	c.int(0, part)
	c.int(1, g.partSupplier(part, row%4))
	c.int(2, r.between(1, 9999))
	c.int(3, r.between(100, 100000))
	c.str(4, g.comment(&r, 49, 198))
	c.done()
}

// orderKey spreads keys as dbgen does: the first 8 of every 32.
func orderKey(row int64) int64 { return row/8*32 + row%8 + 1 }

// ordersChunk makes orders [lo, hi) and their lines: an order's status and
// total price come from its lines.
func (g *generator) ordersChunk(lo, hi int64) (orders, lines *chunk) {
	orders = newChunk(mustTable("orders"), int(hi-lo))
	lines = newChunk(mustTable("lineitem"), int(4*(hi-lo)))
	for row := lo; row < hi; row++ {
		r := g.rng(tableOrders, row)
		key := orderKey(row)
		cust := r.between(1, g.sc.customers)
		// A third of the customers (key divisible by 3) place no orders.
		for cust%3 == 0 && g.sc.customers >= 3 {
			cust = r.between(1, g.sc.customers)
		}
		date := r.between(startDate, lastOrder)
		n := r.between(1, 7)
		var total int64
		shipped := 0
		for ln := int64(1); ln <= n; ln++ {
			part := r.between(1, g.sc.parts)
			supp := g.partSupplier(part, r.between(0, 3))
			qty := r.between(1, 50)
			price := qty * retailPrice(part)
			disc := r.between(0, 10)
			tax := r.between(0, 8)
			ship := date + r.between(1, 121)
			commit := date + r.between(30, 90)
			receipt := ship + r.between(1, 30)
			flag := "N"
			if receipt <= currentDate {
				flag = returnFlags.pick(&r)
			}
			status := "O"
			if ship <= currentDate {
				status = "F"
				shipped++
			}
			total += price * (100 - disc) / 100 * (100 + tax) / 100
			lines.int(0, key)
			lines.int(1, part)
			lines.int(2, supp)
			lines.int(3, ln)
			lines.int(4, qty*100)
			lines.int(5, price)
			lines.int(6, disc)
			lines.int(7, tax)
			lines.str(8, flag)
			lines.str(9, status)
			lines.int(10, ship)
			lines.int(11, commit)
			lines.int(12, receipt)
			lines.str(13, instructions.pick(&r))
			lines.str(14, shipModes.pick(&r))
			lines.str(15, g.comment(&r, 10, 43))
			lines.done()
		}
		status := "P"
		switch int64(shipped) {
		case n:
			status = "F"
		case 0:
			status = "O"
		}
		orders.int(0, key)
		orders.int(1, cust)
		orders.str(2, status)
		orders.int(3, total)
		orders.int(4, date)
		orders.str(5, priorities.pick(&r))
		orders.str(6, keyName("Clerk#", r.between(1, g.sc.clerks)))
		orders.int(7, 0)
		orders.str(8, g.comment(&r, 19, 78))
		orders.done()
	}
	return orders, lines
}
