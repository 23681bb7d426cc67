package functions

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/compute"
)

// Timestamps are microseconds since the Unix epoch, UTC.

func micros(t time.Time) int64      { return t.UnixMicro() }
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

var truncUnits = map[string]int64{
	"microsecond": 1, "millisecond": 1000, "second": 1e6, "minute": 60e6, "hour": 3600e6, "day": 86400e6,
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func dateTruncFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	var bad string
	a, err := rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		unit := strings.ToLower(v[0].string(i))
		us := v[1].int64(i)
		if step, ok := truncUnits[unit]; ok {
			o.i64(floorDiv(us, step) * step)
			return
		}
		t := fromMicros(us)
		switch unit {
		case "week":
			// ISO weeks start on Monday.
			d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
			o.i64(micros(d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7))))
		case "month":
			o.i64(micros(time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)))
		case "quarter":
			o.i64(micros(time.Date(t.Year(), t.Month()-(t.Month()-1)%3, 1, 0, 0, 0, 0, time.UTC)))
		case "year":
			o.i64(micros(time.Date(t.Year(), 1, 1, 0, 0, 0, 0, time.UTC)))
		case "decade", "century", "millennium", "millenium":
			// DuckDB's: the year cut to the unit's multiple (1992 is in the
			// century 1900 and the millennium 1000, not SQL's 1901 and 1001).
			step := map[string]int{"decade": 10, "century": 100}[unit]
			if step == 0 {
				step = 1000
			}
			o.i64(micros(time.Date(t.Year()/step*step, 1, 1, 0, 0, 0, 0, time.UTC)))
		default:
			bad = unit
			o.null()
		}
	})
	if err == nil && bad != "" {
		a.Release()
		return nil, fmt.Errorf("date_trunc: unknown unit %q", bad)
	}
	return a, err
}

func datePartFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	var bad string
	a, err := rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		p, ok := datePart(strings.ToLower(v[0].string(i)), v[1].int64(i))
		if !ok {
			bad = v[0].string(i)
			o.null()
			return
		}
		o.i64(p)
	})
	if err == nil && bad != "" {
		a.Release()
		return nil, fmt.Errorf("date_part: unknown unit %q", bad)
	}
	return a, err
}

// datePartShorthands are the units that are functions of their own too:
// year(t) is date_part('year', t).
var datePartShorthands = []string{"year", "month", "day", "hour", "minute", "second", "millisecond", "microsecond",
	"quarter", "week", "weekofyear", "dayofweek", "weekday", "dayofyear", "dayofmonth", "isodow", "isoyear", "yearweek",
	"decade", "century", "millennium"}

// partFunc is one of DuckDB's shorthands for date_part: year(t), month(t), ...
func partFunc(unit string) ScalarFunc {
	return func(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
		return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
			p, _ := datePart(unit, v[0].int64(i))
			o.i64(p)
		})
	}
}

// datePart is the field unit (lower case) of the timestamp us, as DuckDB's
// date_part; ok is false for an unknown unit.
func datePart(unit string, us int64) (int64, bool) {
	t := fromMicros(us)
	switch unit {
	case "year", "years", "y", "yr", "yrs", "yyyy":
		return int64(t.Year()), true
	case "month", "months", "mon", "mons":
		return int64(t.Month()), true
	case "day", "days", "d", "dayofmonth":
		return int64(t.Day()), true
	case "hour", "hours", "h", "hr", "hrs":
		return int64(t.Hour()), true
	case "minute", "minutes", "min", "mins", "m":
		return int64(t.Minute()), true
	case "second", "seconds", "s", "sec", "secs":
		return int64(t.Second()), true
	case "millisecond", "milliseconds", "ms", "msec", "msecs":
		// As DuckDB: the milliseconds of the minute, seconds included.
		return int64(t.Second())*1000 + int64(t.Nanosecond()/1e6), true
	case "microsecond", "microseconds", "us", "usec", "usecs":
		return int64(t.Second())*1e6 + int64(t.Nanosecond()/1e3), true
	case "dow", "dayofweek", "weekday":
		return int64(t.Weekday()), true
	case "isodow":
		return int64((int(t.Weekday())+6)%7 + 1), true
	case "doy", "dayofyear":
		return int64(t.YearDay()), true
	case "week", "weeks", "weekofyear", "w":
		_, w := t.ISOWeek()
		return int64(w), true
	case "isoyear":
		y, _ := t.ISOWeek()
		return int64(y), true
	case "yearweek":
		y, w := t.ISOWeek()
		return int64(y)*100 + int64(w), true
	case "quarter", "quarters":
		return int64((t.Month()-1)/3 + 1), true
	case "decade", "decades":
		return int64(t.Year() / 10), true
	case "century", "centuries":
		return int64((t.Year()-1)/100 + 1), true
	case "millennium", "millennia":
		return int64((t.Year()-1)/1000 + 1), true
	case "epoch":
		return floorDiv(us, 1e6), true
	}
	return 0, false
}

func toTimestampFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	fl := isFloat(args[0])
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		// Seconds past a TIMESTAMP's range (microseconds in an int64,
		// about 292,000 years either way) are an error, as DuckDB's,
		// not a wrapped value.
		if fl {
			us := math.Round(v[0].float64(i) * 1e6)
			if math.IsNaN(us) || us < math.MinInt64 || us >= math.MaxInt64 {
				o.err = fmt.Errorf("%w: to_timestamp(%v): past the range of TIMESTAMP", ErrOverflow, v[0].float64(i))
				return
			}
			o.i64(int64(us))
			return
		}
		sec := v[0].int64(i)
		if sec > math.MaxInt64/1_000_000 || sec < math.MinInt64/1_000_000 {
			o.err = fmt.Errorf("%w: to_timestamp(%d): past the range of TIMESTAMP", ErrOverflow, sec)
			return
		}
		o.i64(sec * 1e6)
	})
}

func epochFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) { o.f64(float64(v[0].int64(i)) / 1e6) })
}

func epochMsFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) { o.i64(floorDiv(v[0].int64(i), 1000)) })
}

// nowFunc is now(): the time of the call. The binder folds now() to one
// constant per query (DuckDB's: the statement's start), so every row and
// every batch agree; this is the value when a plan keeps the call.
func nowFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	us := micros(time.Now())
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) { o.i64(us) })
}

// procTimeFunc is PROCTIME(), Flink's processing time: clock's reading when
// a batch is evaluated, one value for all its rows (they pass together).
func procTimeFunc(clock func() time.Time) ScalarFunc {
	return func(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
		us := micros(clock())
		return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) { o.i64(us) })
	}
}

// dateDiffFunc is date_diff(unit, start, end) (also datediff): the number of
// unit boundaries crossed from start to end, as DuckDB's (not whole units
// elapsed: date_diff('month', '2024-01-31', '2024-02-01') is 1).
func dateDiffFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	var bad string
	a, err := rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		unit := strings.ToLower(v[0].string(i))
		d, ok := dateDiff(unit, v[1].int64(i), v[2].int64(i))
		if !ok {
			bad = unit
			o.null()
			return
		}
		o.i64(d)
	})
	if err == nil && bad != "" {
		a.Release()
		return nil, fmt.Errorf("date_diff: unknown unit %q", bad)
	}
	return a, err
}

func dateDiff(unit string, a, b int64) (int64, bool) {
	ta, tb := fromMicros(a), fromMicros(b)
	ya, yb := int64(ta.Year()), int64(tb.Year())
	switch unit {
	case "year", "years", "y", "yr", "yrs", "yyyy":
		return yb - ya, true
	case "quarter", "quarters":
		return (yb*4 + int64(tb.Month()-1)/3) - (ya*4 + int64(ta.Month()-1)/3), true
	case "month", "months", "mon", "mons":
		return (yb*12 + int64(tb.Month())) - (ya*12 + int64(ta.Month())), true
	case "decade", "decades":
		return yb/10 - ya/10, true
	case "century", "centuries":
		// As DuckDB: years / 100, so 2000 and 2025 are one century.
		return yb/100 - ya/100, true
	case "millennium", "millennia":
		return yb/1000 - ya/1000, true
	case "week", "weeks", "w":
		// As DuckDB: whole weeks of the days between (not Mondays crossed).
		return (floorDiv(b, 86400e6) - floorDiv(a, 86400e6)) / 7, true
	case "day", "days", "d", "dayofmonth", "dow", "isodow", "doy", "dayofyear":
		return floorDiv(b, 86400e6) - floorDiv(a, 86400e6), true
	case "hour", "hours", "h", "hr", "hrs":
		return floorDiv(b, 3600e6) - floorDiv(a, 3600e6), true
	case "minute", "minutes", "min", "mins", "m":
		return floorDiv(b, 60e6) - floorDiv(a, 60e6), true
	case "second", "seconds", "s", "sec", "secs":
		return floorDiv(b, 1e6) - floorDiv(a, 1e6), true
	case "millisecond", "milliseconds", "ms", "msec", "msecs":
		return floorDiv(b, 1000) - floorDiv(a, 1000), true
	case "microsecond", "microseconds", "us", "usec", "usecs":
		return b - a, true
	}
	return 0, false
}

// timeBucketOrigin is DuckDB's default origin of time_bucket: a Monday,
// 2000-01-03, so that week buckets start on Mondays.
var timeBucketOrigin = micros(time.Date(2000, 1, 3, 0, 0, 0, 0, time.UTC))

// timeBucketFunc is time_bucket(width, t [, origin]): the start of the
// width-long bucket holding t, buckets aligned on origin.
func timeBucketFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	bad := false
	a, err := rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		w, t, origin := v[0].int64(i), v[1].int64(i), timeBucketOrigin
		if len(v) > 2 {
			origin = v[2].int64(i)
		}
		if w <= 0 {
			bad = true
			o.null()
			return
		}
		o.i64(floorDiv(t-origin, w)*w + origin)
	})
	if err == nil && bad {
		a.Release()
		return nil, fmt.Errorf("%w: time_bucket: the width must be positive", ErrBadArgument)
	}
	return a, err
}

func dayNameFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) { o.str(fromMicros(v[0].int64(i)).Weekday().String()) })
}

func monthNameFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) { o.str(fromMicros(v[0].int64(i)).Month().String()) })
}

// strftimeFunc is strftime(t, format): t written by format's % codes, as
// DuckDB's (C's strftime, plus %f microseconds, %g milliseconds, and a '-'
// flag, %-d, for no padding).
func strftimeFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	var bad string
	ti, fi := 0, 1
	if typeID(args[0]) == arrow.STRING {
		ti, fi = 1, 0 // strftime(format, t), which DuckDB takes too
	}
	var b strings.Builder
	a, err := rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		b.Reset()
		if code := strftime(&b, fromMicros(v[ti].int64(i)), v[fi].string(i)); code != "" {
			bad = code
		}
		o.str(b.String())
	})
	if err == nil && bad != "" {
		a.Release()
		return nil, fmt.Errorf("%w: strftime: unknown format code %%%s", ErrBadArgument, bad)
	}
	return a, err
}

// strftime writes t by format; it returns the first unknown code, if any.
func strftime(b *strings.Builder, t time.Time, format string) string {
	num := func(x, width int, pad bool) {
		s := fmt.Sprint(x)
		if pad {
			for k := len(s); k < width; k++ {
				b.WriteByte('0')
			}
		}
		b.WriteString(s)
	}
	for i := 0; i < len(format); i++ {
		ch := format[i]
		if ch != '%' || i+1 == len(format) {
			b.WriteByte(ch)
			continue
		}
		i++
		pad := true
		if format[i] == '-' && i+1 < len(format) {
			pad = false
			i++
		}
		switch format[i] {
		case 'Y':
			num(t.Year(), 4, pad)
		case 'y':
			num(t.Year()%100, 2, pad)
		case 'm':
			num(int(t.Month()), 2, pad)
		case 'd':
			num(t.Day(), 2, pad)
		case 'H':
			num(t.Hour(), 2, pad)
		case 'I':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			num(h, 2, pad)
		case 'M':
			num(t.Minute(), 2, pad)
		case 'S':
			num(t.Second(), 2, pad)
		case 'f':
			num(t.Nanosecond()/1000, 6, true)
		case 'g':
			num(t.Nanosecond()/1e6, 3, true)
		case 'n':
			num(t.Nanosecond(), 9, true)
		case 'p':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'j':
			num(t.YearDay(), 3, pad)
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'w':
			num(int(t.Weekday()), 1, pad)
		case 'u':
			num((int(t.Weekday())+6)%7+1, 1, pad)
		case 'U':
			// Week of the year, weeks starting on Sunday; days before the
			// first Sunday are week 0.
			num((t.YearDay()+6-int(t.Weekday()))/7, 2, pad)
		case 'W':
			num((t.YearDay()+6-(int(t.Weekday())+6)%7)/7, 2, pad)
		case 'V':
			_, w := t.ISOWeek()
			num(w, 2, pad)
		case 'G':
			y, _ := t.ISOWeek()
			num(y, 4, pad)
		case 'c':
			strftime(b, t, "%Y-%m-%d %H:%M:%S")
		case 'x':
			strftime(b, t, "%Y-%m-%d")
		case 'X':
			strftime(b, t, "%H:%M:%S")
		case 'z':
			b.WriteString("+00")
		case 'Z':
		case '%':
			b.WriteByte('%')
		default:
			return string(format[i])
		}
	}
	return ""
}
