package expr

import (
	"time"

	"github.com/apache/arrow/go/v17/arrow"
)

// AddCalendar adds a calendar interval to a time as DuckDB does: the
// months first, on the calendar, keeping the day of the month unless the
// target month is shorter (January 31 plus a month is February's last day),
// then the days, then the rest. sign -1 subtracts.
func AddCalendar(t time.Time, iv arrow.MonthDayNanoInterval, sign int) time.Time {
	t = t.UTC()
	if m := int(iv.Months) * sign; m != 0 {
		y, mon, d := t.Date()
		total := y*12 + int(mon) - 1 + m
		ny, nm := floorDiv(total, 12), total-floorDiv(total, 12)*12+1
		if last := daysIn(ny, time.Month(nm)); d > last {
			d = last
		}
		h, mi, s := t.Clock()
		t = time.Date(ny, time.Month(nm), d, h, mi, s, t.Nanosecond(), time.UTC)
	}
	if iv.Days != 0 {
		t = t.AddDate(0, 0, int(iv.Days)*sign)
	}
	return t.Add(time.Duration(iv.Nanoseconds) * time.Duration(sign))
}

func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
