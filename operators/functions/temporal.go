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
		us := v[1].int64(i)
		t := fromMicros(us)
		switch strings.ToLower(v[0].string(i)) {
		case "year", "years":
			o.i64(int64(t.Year()))
		case "month", "months":
			o.i64(int64(t.Month()))
		case "day", "days":
			o.i64(int64(t.Day()))
		case "hour", "hours":
			o.i64(int64(t.Hour()))
		case "minute", "minutes":
			o.i64(int64(t.Minute()))
		case "second", "seconds":
			o.i64(int64(t.Second()))
		case "millisecond", "milliseconds":
			// As DuckDB: the milliseconds of the minute, seconds included.
			o.i64(int64(t.Second())*1000 + int64(t.Nanosecond()/1e6))
		case "microsecond", "microseconds":
			o.i64(int64(t.Second())*1e6 + int64(t.Nanosecond()/1e3))
		case "dow", "dayofweek":
			o.i64(int64(t.Weekday()))
		case "isodow":
			o.i64(int64((int(t.Weekday())+6)%7 + 1))
		case "doy", "dayofyear":
			o.i64(int64(t.YearDay()))
		case "week", "weekofyear":
			_, w := t.ISOWeek()
			o.i64(int64(w))
		case "quarter":
			o.i64(int64((t.Month()-1)/3 + 1))
		case "decade":
			o.i64(int64(t.Year() / 10))
		case "century":
			o.i64(int64((t.Year()-1)/100 + 1))
		case "epoch":
			o.i64(floorDiv(us, 1e6))
		default:
			bad = v[0].string(i)
			o.null()
		}
	})
	if err == nil && bad != "" {
		a.Release()
		return nil, fmt.Errorf("date_part: unknown unit %q", bad)
	}
	return a, err
}

func toTimestampFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	fl := isFloat(args[0])
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		if fl {
			o.i64(int64(math.Round(v[0].float64(i) * 1e6)))
		} else {
			o.i64(v[0].int64(i) * 1e6)
		}
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
