package functions

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/compute"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/arrow/scalar"
)

// to_timestamp of seconds past a TIMESTAMP's range (microseconds in an
// int64) is an error, as DuckDB's; to_timestamp(1e300) wrapped to the year
// -290308. Within the range the value is the seconds' microseconds.
func TestToTimestampPastItsRangeIsAnError(t *testing.T) {
	fn, err := Builtins().Scalar("to_timestamp")
	if err != nil {
		t.Fatal(err)
	}
	c := NewCtx(memory.NewGoAllocator())
	call := func(s scalar.Scalar) (int64, error) {
		a, err := fn(c, arrow.FixedWidthTypes.Timestamp_us, []compute.Datum{compute.NewDatum(s)}, 1)
		if err != nil {
			return 0, err
		}
		defer a.Release()
		return int64(a.(*array.Timestamp).Value(0)), nil
	}
	for _, s := range []scalar.Scalar{scalar.NewFloat64Scalar(1e300), scalar.NewFloat64Scalar(-1e300), scalar.NewFloat64Scalar(math.NaN()),
		scalar.NewFloat64Scalar(math.Inf(1)), scalar.NewInt64Scalar(math.MaxInt64), scalar.NewInt64Scalar(-9_300_000_000_000)} {
		if us, err := call(s); !errors.Is(err, ErrOverflow) {
			t.Errorf("to_timestamp(%v) = %d, %v: want an error", s, us, err)
		}
	}
	for _, tc := range []struct {
		s    scalar.Scalar
		want int64
	}{
		{scalar.NewInt64Scalar(1_700_000_000), 1_700_000_000_000_000},
		{scalar.NewFloat64Scalar(1.5), 1_500_000},
		{scalar.NewInt64Scalar(-9_000_000_000_000), -9_000_000_000_000_000_000},
	} {
		if us, err := call(tc.s); err != nil || us != tc.want {
			t.Errorf("to_timestamp(%v) = %d, %v: want %d", tc.s, us, err, tc.want)
		}
	}
}

// date_trunc's decade, century and millennium are DuckDB's: the year cut to
// a multiple of 10, 100 or 1000 (1992 is in the century 1900 and the
// millennium 1000, where SQL's centuries begin in 1901).
func TestDateTruncPastTheYear(t *testing.T) {
	fn, err := Builtins().Scalar("date_trunc")
	if err != nil {
		t.Fatal(err)
	}
	c := NewCtx(memory.NewGoAllocator())
	at := time.Date(1992, 3, 7, 13, 4, 5, 0, time.UTC).UnixMicro()
	for unit, want := range map[string]int{"decade": 1990, "century": 1900, "millennium": 1000, "millenium": 1000} {
		a, err := fn(c, arrow.FixedWidthTypes.Timestamp_us, []compute.Datum{compute.NewDatum(scalar.NewStringScalar(unit)),
			compute.NewDatum(scalar.NewTimestampScalar(arrow.Timestamp(at), arrow.FixedWidthTypes.Timestamp_us))}, 1)
		if err != nil {
			t.Fatalf("%s: %v", unit, err)
		}
		if got := time.UnixMicro(int64(a.(*array.Timestamp).Value(0))).UTC(); got != time.Date(want, 1, 1, 0, 0, 0, 0, time.UTC) {
			t.Errorf("date_trunc('%s', 1992-03-07) = %v, want %d-01-01", unit, got, want)
		}
		a.Release()
	}
}
