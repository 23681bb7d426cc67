package sources

// parseTimeText reads the timestamp layouts that files and messages hold
// most, from the bytes in place, without time.Parse: YYYY-MM-DD, optionally
// followed by a space and hh:mm, or by a space or T and hh:mm:ss, then an
// optional fraction of 1 to 9 digits, and after a T optionally Z or ±hh:mm
// (RFC 3339). It returns the instant as seconds since the Unix epoch and
// nanoseconds, in UTC.
//
// Why: ParseTime tries time.Parse with each of its layouts in turn, and a
// Nexmark CSV stream's "2006-01-02 15:04:05.ffffff" fails RFC 3339 first,
// so every row paid two generic parses (a fifth of a Nexmark worker's scan).
//
// It is exact for every input it accepts: the instant is the one ParseTime's
// first accepting layout gives (FuzzParseTimeText holds it to that). The
// rule that makes it so: it accepts only fixed-width digits at fixed
// places, every part in time.Parse's range (the day within its month and
// year), and a zone only where RFC 3339 takes one; anything else (one-digit
// hours, a comma before the fraction, ten digits of fraction, a lower-case
// t or z, an offset after a space, text around it) is refused, and
// ParseTime's layouts decide it as before.
func parseTimeText[T []byte | string](s T) (secs int64, nsec int, ok bool) {
	if len(s) != 10 && len(s) != 16 && len(s) < 19 {
		return 0, 0, false
	}
	ok = true
	// num reads the fixed-width digits s[i:j].
	num := func(i, j int) int {
		v := 0
		for ; i < j; i++ {
			c := s[i]
			if c < '0' || c > '9' {
				ok = false
				return 0
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	y, mo, d := num(0, 4), num(5, 7), num(8, 10)
	if !ok || s[4] != '-' || s[7] != '-' || mo < 1 || mo > 12 || d < 1 || d > daysIn(mo, y) {
		return 0, 0, false
	}
	var h, mi, sec int
	switch {
	case len(s) == 10:
	case len(s) == 16:
		// "2006-01-02 15:04": ParseTime's layout of that form has a space.
		h, mi = num(11, 13), num(14, 16)
		if !ok || s[10] != ' ' || s[13] != ':' || h > 23 || mi > 59 {
			return 0, 0, false
		}
	default:
		h, mi, sec = num(11, 13), num(14, 16), num(17, 19)
		if !ok || s[10] != ' ' && s[10] != 'T' || s[13] != ':' || s[16] != ':' || h > 23 || mi > 59 || sec > 59 {
			return 0, 0, false
		}
		rest := 19
		if rest < len(s) && s[rest] == '.' {
			n := 0
			for rest+1+n < len(s) && s[rest+1+n] >= '0' && s[rest+1+n] <= '9' {
				n++
			}
			if n < 1 || n > 9 {
				return 0, 0, false
			}
			nsec = num(rest+1, rest+1+n)
			for k := n; k < 9; k++ {
				nsec *= 10
			}
			rest += 1 + n
		}
		if rest < len(s) {
			// A zone, only after a T (RFC 3339): Z, or ±hh:mm east of UTC.
			if s[10] != 'T' {
				return 0, 0, false
			}
			switch {
			case len(s)-rest == 1 && s[rest] == 'Z':
			case len(s)-rest == 6 && (s[rest] == '+' || s[rest] == '-') && s[rest+3] == ':':
				oh, om := num(rest+1, rest+3), num(rest+4, rest+6)
				if !ok || oh > 23 || om > 59 {
					return 0, 0, false
				}
				off := int64(oh*3600 + om*60)
				if s[rest] == '-' {
					off = -off
				}
				secs = -off
			default:
				return 0, 0, false
			}
		}
	}
	secs += daysFromCivil(y, mo, d)*86400 + int64(h*3600+mi*60+sec)
	return secs, nsec, true
}

func daysIn(m, y int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil is the days from 1970-01-01 to y-m-d in the proleptic
// Gregorian calendar (H. Hinnant's algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}
