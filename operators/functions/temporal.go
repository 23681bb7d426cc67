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
		case "month":
			o.i64(micros(time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)))
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
		case "year":
			o.i64(int64(t.Year()))
		case "month":
			o.i64(int64(t.Month()))
		case "day":
			o.i64(int64(t.Day()))
		case "hour":
			o.i64(int64(t.Hour()))
		case "minute":
			o.i64(int64(t.Minute()))
		case "second":
			o.i64(int64(t.Second()))
		case "millisecond":
			o.i64(int64(t.Nanosecond() / 1e6))
		case "dow":
			o.i64(int64(t.Weekday()))
		case "doy":
			o.i64(int64(t.YearDay()))
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
