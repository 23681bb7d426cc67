package functions

import (
	"strconv"
	"strings"
	"time"
)

// microsPerDay is one day of an interval, as DuckDB's normalisation counts it.
const microsPerDay = 24 * 60 * 60 * 1_000_000

// IntervalText prints an interval as DuckDB does: whole days ("2 days"),
// then the rest as HH:MM:SS with the fraction of a second trimmed of
// trailing zeros ("01:30:00", "00:00:00.25"); "00:00:00" for zero. An
// interval here is a count of microseconds (no months), split into days
// the way DuckDB's timestamp difference splits it, so TIMESTAMP -
// TIMESTAMP and INTERVAL '2' DAY print as they do there; an INTERVAL '36'
// HOUR literal, which DuckDB keeps as hours, prints as 1 day 12:00:00.
// Negative parts carry their sign ("-01:00:00").
func IntervalText(d time.Duration) string {
	us := d.Microseconds()
	days, rest := us/microsPerDay, us%microsPerDay
	var b strings.Builder
	if days != 0 {
		b.WriteString(strconv.FormatInt(days, 10))
		if days == 1 || days == -1 {
			b.WriteString(" day")
		} else {
			b.WriteString(" days")
		}
	}
	if rest == 0 && days != 0 {
		return b.String()
	}
	if days != 0 {
		b.WriteByte(' ')
	}
	if rest < 0 {
		b.WriteByte('-')
		rest = -rest
	}
	secs, frac := rest/1_000_000, rest%1_000_000
	two := func(v int64) {
		if v < 10 {
			b.WriteByte('0')
		}
		b.WriteString(strconv.FormatInt(v, 10))
	}
	two(secs / 3600)
	b.WriteByte(':')
	two(secs / 60 % 60)
	b.WriteByte(':')
	two(secs % 60)
	if frac != 0 {
		f := strconv.FormatInt(frac+1_000_000, 10)[1:] // six digits
		b.WriteByte('.')
		b.WriteString(strings.TrimRight(f, "0"))
	}
	return b.String()
}
