package sources

import (
	"runtime"
	"testing"
	"time"
)

// timeSeeds are the forms parseTimeText reads and their near misses.
var timeSeeds = []string{
	"2026-01-01 00:00:00.000400", "2026-01-01T00:00:00.0004Z", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00",
	"1997-10-23", "2024-02-29 23:59", "2024-02-29T23:59:59.123456789+05:30", "1969-12-31T23:59:59.999999-08:00",
	"0000-01-01 00:00:00", "0001-03-01T00:00:00-00:00", "9999-12-31T23:59:59.999999999+23:59", "1900-02-28 12:00:00.5",
	"2023-02-29", "2024-04-31 00:00", "2024-01-01 24:00:00", "2024-01-01 23:60:00", "2024-01-01 23:59:60",
	"2024-01-01 1:00:00", "2024-01-01 00:00:00.", "2024-01-01 00:00:00,5", "2024-01-01 00:00:00Z",
	"2024-01-01t00:00:00Z", "2024-01-01T00:00:00z", "2024-01-01T00:00:00.1234567891Z", "2024-01-01T00:00:00+24:00",
	"2024-01-01T00:00:00+05:60", "2024-01-01T00:00:00+0530", "2024-1-01", "2024-01-01T00:00", " 2024-01-01",
	"2024-01-01 00:00:00 ", "+024-01-01", "2024-01-01 00:00:00.1234567890",
}

// checkTimeText fails t if parseTimeText reads s (as a string or as bytes)
// to another instant than ParseTime's layouts give, or reads what they
// refuse.
func checkTimeText(t *testing.T, s string) bool {
	secs, ns, ok := parseTimeText(s)
	bs, bns, bok := parseTimeText([]byte(s))
	if bs != secs || bns != ns || bok != ok {
		t.Fatalf("%q: string %d.%09d %v, bytes %d.%09d %v", s, secs, ns, ok, bs, bns, bok)
	}
	if !ok {
		return false
	}
	want, err := parseTimeLayouts(s)
	if err != nil {
		t.Fatalf("%q: read as %d.%09d, time.Parse refuses it: %v", s, secs, ns, err)
	}
	if want.Unix() != secs || want.Nanosecond() != ns {
		t.Fatalf("%q: read as %d.%09d, time.Parse gives %d.%09d (%v)", s, secs, ns, want.Unix(), want.Nanosecond(), want)
	}
	return true
}

// Every input parseTimeText reads is read to time.Parse's instant: the
// seeds, and every one-byte change and every prefix of each.
func TestParseTimeTextMatchesTimeParse(t *testing.T) {
	alphabet := "0123456789-: T.Z+zt,"
	read := 0
	for _, seed := range timeSeeds {
		for n := 0; n <= len(seed); n++ {
			if checkTimeText(t, seed[:n]) {
				read++
			}
		}
		for i := range seed {
			for _, c := range []byte(alphabet) {
				b := []byte(seed)
				b[i] = c
				if checkTimeText(t, string(b)) {
					read++
				}
			}
		}
	}
	// The common forms are read here, not left to time.Parse.
	for _, s := range []string{"2026-01-01 00:00:00.000400", "2026-01-01T00:00:00.0004Z", "2026-01-01T00:00:00+02:00",
		"2026-01-01T00:00:00", "2026-01-01", "2026-01-01 10:30"} {
		if !checkTimeText(t, s) {
			t.Errorf("%q left to time.Parse", s)
		}
	}
	if read < 1000 {
		t.Errorf("only %d of the changed inputs read: the test checks too little", read)
	}
}

func FuzzParseTimeText(f *testing.F) {
	for _, s := range timeSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkTimeText(t, s) })
}

// BenchmarkParseTime reads Nexmark's CSV timestamps and RFC 3339 ones
// with ParseTime (text: parseTimeText first) and with time.Parse's layouts
// alone (layouts), in turns; text/layouts is the ratio of their CPU times
// on this goroutine's locked thread.
func BenchmarkParseTime(b *testing.B) {
	for _, c := range []struct{ name, layout string }{{"nexmark", "2006-01-02 15:04:05.000000"}, {"rfc3339", time.RFC3339Nano}} {
		var texts []string
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := range 4096 {
			texts = append(texts, base.Add(time.Duration(i)*100*time.Microsecond+time.Duration(i%7)*time.Nanosecond).Format(c.layout))
		}
		b.Run(c.name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var took [2]time.Duration
			parse := [2]func(string) (time.Time, error){parseTimeLayouts, ParseTime}
			for range b.N {
				for k := range 2 {
					start := threadCPU()
					for _, s := range texts {
						if _, err := parse[k](s); err != nil {
							b.Fatal(err)
						}
					}
					took[k] += threadCPU() - start
				}
			}
			b.ReportMetric(float64(took[1])/float64(took[0]), "text/layouts")
		})
	}
}
