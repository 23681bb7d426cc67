package coordinator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// ErrDenied (see coordinator.go) is also what a client gets when the NATS
// server refuses it a control subject: the server drops a publish it does
// not permit and says so only asynchronously, so a request would otherwise
// wait out its whole timeout.

// denied reports the server's refusal of subject to nc, if it sent one.
func denied(nc *nats.Conn, subject string) error {
	err := nc.LastError()
	if err == nil || !errors.Is(err, nats.ErrPermissionViolation) {
		return nil
	}
	// A request also needs its reply inbox: a refused inbox subscription
	// refuses every request.
	if strings.Contains(err.Error(), `"`+subject+`"`) || strings.Contains(err.Error(), `Subscription to "_INBOX`) {
		return err
	}
	return nil
}

// requestChecked is nc.RequestWithContext that returns as soon as the server
// refuses the publish (or, checked once after a flush, the subscriptions
// subs of the caller's).
func requestChecked(ctx context.Context, nc *nats.Conn, subject string, body []byte) (*nats.Msg, error) {
	type result struct {
		m   *nats.Msg
		err error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan result, 1)
	go func() {
		m, err := nc.RequestWithContext(ctx, subject, body)
		ch <- result{m, err}
	}()
	// The server answers a refused publish with -ERR at once; the poll
	// only bounds how soon the client notices.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case r := <-ch:
			if err := denied(nc, subject); err != nil && r.err != nil {
				return nil, err
			}
			return r.m, r.err
		case <-tick.C:
			if err := denied(nc, subject); err != nil {
				return nil, err
			}
		}
	}
}

// checkSubscribed flushes nc and reports a refusal of any of subjects.
func checkSubscribed(nc *nats.Conn, subjects ...string) error {
	if err := nc.Flush(); err != nil {
		return err
	}
	// The -ERR for a refused SUB arrives before the PONG of the flush.
	for _, s := range subjects {
		if err := denied(nc, s); err != nil {
			return fmt.Errorf("%w: subscribe %s: %w", ErrDenied, s, err)
		}
	}
	return nil
}
