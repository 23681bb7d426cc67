package natsserver

import (
	"net/url"
	"strings"
)

// Redact removes credentials from every URL in s: nats://user:pw@host
// prints as nats://REDACTED@host. Whatever prints a NATS URL (logs,
// errors, SHOW output) prints it through Redact.
//
// A URL runs from its scheme to the next white space. Its credentials are
// everything between "://" and its last '@': a password may hold '@', '/',
// ':' and ',' (nats://bob:b0b,comma@host), none of which a host can. A
// comma-separated list of URLs (a NATS server list) is redacted URL by URL
// when every piece parses as a URL on its own; when one does not (a comma
// inside a password that is followed by something that looks like a
// scheme), the list is redacted as one, up to its last '@': too much
// rather than a password.
func Redact(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		start := schemeStart(s, i)
		if start < 0 {
			b.WriteString(s[:i+3])
			s = s[i+3:]
			continue
		}
		end := i + 3 + len(s[i+3:])
		if j := strings.IndexAny(s[i+3:], " \t\r\n"); j >= 0 {
			end = i + 3 + j
		}
		b.WriteString(s[:start])
		b.WriteString(redactURLs(s[start:end]))
		s = s[end:]
	}
}

// schemeStart is where the scheme ending at s[:i] ("nats" of "nats://")
// begins, or -1 when s[:i] does not end in one (a letter, then letters,
// digits, '+', '-' or '.').
func schemeStart(s string, i int) int {
	j := i
	for j > 0 && schemeChar(s[j-1]) {
		j--
	}
	for j < i && !letter(s[j]) { // "1nats://": the scheme starts at its first letter
		j++
	}
	if j == i {
		return -1
	}
	return j
}

func letter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func schemeChar(c byte) bool {
	return letter(c) || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}

// redactURLs redacts one white-space-free run that starts with a URL.
func redactURLs(tok string) string {
	var pieces []string
	rest := tok
	for {
		k := nextURLInList(rest)
		if k < 0 {
			pieces = append(pieces, rest)
			break
		}
		pieces = append(pieces, rest[:k])
		rest = rest[k+1:]
	}
	if len(pieces) > 1 {
		for _, p := range pieces {
			if _, err := url.Parse(p); err != nil {
				return redactOne(tok)
			}
		}
		for i, p := range pieces {
			pieces[i] = redactOne(p)
		}
		return strings.Join(pieces, ",")
	}
	return redactOne(tok)
}

// nextURLInList is the index of the first ',' in s that another URL
// (scheme://) follows, or -1.
func nextURLInList(s string) int {
	for off := 0; ; {
		k := strings.IndexByte(s[off:], ',')
		if k < 0 {
			return -1
		}
		k += off
		if j := strings.Index(s[k+1:], "://"); j > 0 && schemeStart(s[k+1:], j) == 0 {
			return k
		}
		off = k + 1
	}
}

// redactOne replaces what lies between a URL's "://" and its last '@'.
func redactOne(u string) string {
	i := strings.Index(u, "://")
	at := strings.LastIndexByte(u, '@')
	if i < 0 || at < i+3 {
		return u
	}
	return u[:i+3] + "REDACTED" + u[at:]
}
