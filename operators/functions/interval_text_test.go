package functions

import (
	"testing"
	"time"
)

// TestIntervalText: intervals print as DuckDB's CLI prints them (they
// printed Go-style: 1h0m0s, 250ms, 48h0m0s).
func TestIntervalText(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                    "00:00:00",
		time.Hour:                            "01:00:00",
		90 * time.Minute:                     "01:30:00",
		250 * time.Millisecond:               "00:00:00.25",
		27 * time.Millisecond:                "00:00:00.027",
		98 * time.Microsecond:                "00:00:00.000098",
		1500 * time.Millisecond:              "00:00:01.5",
		48 * time.Hour:                       "2 days",
		24 * time.Hour:                       "1 day",
		25*time.Hour + 30*time.Second:        "1 day 01:00:30",
		-time.Hour:                           "-01:00:00",
		-(49 * time.Hour):                    "-2 days -01:00:00",
		100*time.Hour + 200*time.Millisecond: "4 days 04:00:00.2",
	} {
		if got := IntervalText(d); got != want {
			t.Errorf("IntervalText(%s) = %q, want %q", d, got, want)
		}
	}
}
