// Package relay is `tierflow bench relay`: it measures the relay against raw
// NATS in the same run:
// Arrow batches per second and MB/s through the NATS relay (IPC encode,
// framing, chunking, credit, decode) against publishing and subscribing the
// very same number of bytes with bare core NATS, plus the in-process backend,
// plus the one-hop latency each adds. It measures in two modes: both ends in
// this process over loopback, and across processes, with the receiving ends
// in a peer process (ServePeer) on its own connection, so batches cross a
// process boundary over TCP. `tierflow bench relay` and the package's Go
// benchmarks share it. The measurement must not import runtime: the command
// says how to start the peer (Options.Peer).
package relay

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/bench"
	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/relay/frame"
	"github.com/tierflow/tierflow/relay/inproc"
	"github.com/tierflow/tierflow/relay/natsrelay"
	"github.com/tierflow/tierflow/relay/natsserver"
)

// Options bound a run. Zero values take the defaults, which finish in a few
// seconds on a laptop.
type Options struct {
	Rows    []int // rows per batch, one case each (default 64, 1024, 4096)
	MB      int   // megabytes moved per throughput measurement (default 48)
	Rounds  int   // alternating raw/relay measurements, median kept (default 3)
	Latency int   // one-at-a-time round trips for the latency percentiles (default 200)
	// Window is the relay's credit window in messages, fixed (0: the
	// relay's default, which grows while batches are small; the raw
	// baseline then keeps relay.DefaultWindow in flight).
	Window int
	URL    string // external NATS server; empty starts an embedded one
	// NATS are options of the bench's connections to URL: its credentials
	// and TLS (the peer process gets them from its own command, see Peer).
	NATS []nats.Option
	// MaxPayload of the embedded server (default natsserver.DefaultMaxPayload);
	// batches above it are chunked by the relay and by the raw baseline alike.
	MaxPayload int32
	Progress   io.Writer     // plain progress lines; nil for none
	Timeout    time.Duration // bound on one measurement (default 60s)
	Allocator  memory.Allocator
	// Modes to measure, ModeInProcess and/or ModeProcesses (default both
	// when Peer is set, else in-process only).
	Modes []string
	// Peer makes the command of the peer process for ModeProcesses; the
	// command must end up calling ServePeer(ctx, url, control, its stdin)
	// with the credentials of NATS. url is URL as given (it may hold
	// user:password@): the command must not put credentials on the child's
	// command line. Its stdin is set by Run; a nil Stderr keeps the tail
	// for errors.
	Peer func(url, control string) *exec.Cmd
	// Tick, if set, is called after every step of Steps(), with what ran.
	Tick func(what string)
}

// Row is one case of the result.
type Row struct {
	Mode     string  `json:"mode"`    // ModeInProcess or ModeProcesses
	Backend  string  `json:"backend"` // nats or inproc
	Case     string  `json:"case"`    // backend/rows
	Rows     int     `json:"rows"`
	BatchKB  float64 `json:"batch_kb"`
	Batches  int     `json:"batches"`
	BatchesS float64 `json:"batches_s"`
	RelayMBs float64 `json:"relay_mb_s"`
	RawMBs   float64 `json:"raw_mb_s"`
	Ratio    float64 `json:"ratio"`
	P50us    float64 `json:"p50_us"`
	P99us    float64 `json:"p99_us"`
	RawP50us float64 `json:"raw_p50_us"`
	RawP99us float64 `json:"raw_p99_us"`
	// The one-hop latency the relay adds over raw NATS (relay - raw).
	AddedP50s float64 `json:"added_p50_us"`
	AddedP99s float64 `json:"added_p99_us"`
	// CPU time of the whole process per MB moved, relay and raw, and raw's
	// over relay's: on a loaded machine wall-clock ratios swing with the
	// neighbours, CPU cost per byte does not.
	CPUusMB    float64 `json:"cpu_us_per_mb"`
	RawCPUusMB float64 `json:"raw_cpu_us_per_mb"`
	CPURatio   float64 `json:"cpu_ratio"`
	// RawIPCMBs is bare NATS moving the Arrow batch itself, encoded and
	// decoded with the relay's codec (RawIPCThroughput), over the relay's
	// wire bytes per batch, and IPCRatio the relay's MB/s over it: raw
	// NATS (RawMBs) publishes ready-made bytes that nobody decodes, which
	// no user moving Arrow batches gets. Measured on the NATS rows in
	// process whose batch fits one message; 0 elsewhere.
	RawIPCMBs float64 `json:"raw_ipc_mb_s,omitempty"`
	IPCRatio  float64 `json:"ipc_ratio,omitempty"`
	// RawWindow is what raw NATS (RawMBs) keeps in flight, in messages.
	// Where the relay's window grows by bytes it is the relay's floor
	// (32), while the relay may keep up to SameWindow of these batches in
	// flight (2 MiB of them: 117 at 64 rows), which favours the relay. So
	// raw NATS runs again with SameWindow in flight, the same bytes as the
	// relay: RawSameMBs, its CPU per MB RawSameCPUusMB, and the relay's
	// SameRatio and SameCPURatio against it. 0 where the windows match.
	RawWindow      int     `json:"raw_window"`
	SameWindow     int     `json:"same_window,omitempty"`
	RawSameMBs     float64 `json:"raw_same_window_mb_s,omitempty"`
	RawSameCPUusMB float64 `json:"raw_same_window_cpu_us_per_mb,omitempty"`
	SameRatio      float64 `json:"same_window_ratio,omitempty"`
	SameCPURatio   float64 `json:"same_window_cpu_ratio,omitempty"`
	// RawCreditedMBs is raw NATS in process with the relay's window
	// (SameWindow, or RawWindow where they match) kept over NATS
	// (RawCreditedThroughput), as across processes, where RawMBs's window
	// is a counter the publisher shares with the subscriber; its CPU per
	// MB RawCreditedCPUusMB, and the relay's CreditedRatio to it. The
	// relay's credit crosses NATS: this is raw NATS paying for the same,
	// with the same messages in flight. In process, for a batch that fits
	// one message, only; 0 elsewhere.
	RawCreditedMBs     float64 `json:"raw_credited_mb_s,omitempty"`
	RawCreditedCPUusMB float64 `json:"raw_credited_cpu_us_per_mb,omitempty"`
	CreditedRatio      float64 `json:"credited_ratio,omitempty"`
}

func (o *Options) defaults() {
	if len(o.Rows) == 0 {
		o.Rows = []int{64, 1024, 4096}
	}
	if o.MB <= 0 {
		o.MB = 48
	}
	if o.Rounds <= 0 {
		o.Rounds = 3
	}
	if o.Latency <= 0 {
		o.Latency = 200
	}
	if o.Window < 0 {
		o.Window = 0
	}
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	if o.Allocator == nil {
		o.Allocator = memory.DefaultAllocator
	}
	if len(o.Modes) == 0 {
		o.Modes = []string{ModeInProcess}
		if o.Peer != nil {
			o.Modes = append(o.Modes, ModeProcesses)
		}
	}
}

// Steps is how many times Run calls Tick with these options.
func (o Options) Steps() int {
	o.defaults()
	return len(o.Rows) * len(o.Modes) * (o.Rounds + 1)
}

func (o *Options) tick(format string, args ...any) {
	if o.Tick != nil {
		o.Tick(fmt.Sprintf(format, args...))
	}
}

func (o *Options) logf(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", args...)
	}
}

// Env is the NATS side of a run: two connections (sender and receiver side,
// as on two workers) to one server.
type Env struct {
	srv      *natsserver.Server
	pub, sub *nats.Conn
}

// NewEnv starts an embedded server (url empty) with the given max payload (0
// for the default) or connects to url with opts (credentials, TLS).
func NewEnv(url string, maxPayload int32, opts ...nats.Option) (*Env, error) {
	e := &Env{}
	if url == "" {
		s, err := natsserver.Start(natsserver.Options{MaxPayload: maxPayload})
		if err != nil {
			return nil, err
		}
		e.srv, url = s, s.ClientURL()
	}
	var err error
	if e.pub, err = natsserver.Connect(url, opts...); err == nil {
		e.sub, err = natsserver.Connect(url, opts...)
	}
	if err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Close closes the connections and the embedded server.
func (e *Env) Close() {
	for _, nc := range []*nats.Conn{e.pub, e.sub} {
		if nc != nil {
			nc.Close()
		}
	}
	if e.srv != nil {
		e.srv.Shutdown()
	}
}

// Record makes a batch shaped like the workloads: an id, a timestamp and a
// 64-float tensor per row (about 270 bytes a row).
func Record(mem memory.Allocator, rows int) arrow.Record {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
		{Name: "x", Type: arrow.FixedSizeListOf(64, arrow.PrimitiveTypes.Float32)},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	id := b.Field(0).(*array.Int64Builder)
	ts := b.Field(1).(*array.Int64Builder)
	xl := b.Field(2).(*array.FixedSizeListBuilder)
	xv := xl.ValueBuilder().(*array.Float32Builder)
	for i := 0; i < rows; i++ {
		id.Append(int64(i))
		ts.Append(int64(i) * 1000)
		xl.Append(true)
		for j := 0; j < 64; j++ {
			xv.Append(float32(i*64+j) * 0.5)
		}
	}
	return b.NewRecord()
}

var linkSeq atomic.Uint32

func nextLink() relay.LinkID {
	return relay.LinkID{Query: "bench", Edge: linkSeq.Add(1)}
}

// Throughput is one measurement.
type Throughput struct {
	Batches int
	Bytes   uint64 // wire bytes (relay: as metered)
	Elapsed time.Duration
	CPU     time.Duration // process CPU time (user + system) while it ran
}

// CPUusPerMB is the process CPU time spent per MB moved.
func (t Throughput) CPUusPerMB() float64 {
	return float64(t.CPU.Microseconds()) / (float64(t.Bytes) / 1e6)
}

func (t Throughput) MBs() float64      { return float64(t.Bytes) / t.Elapsed.Seconds() / 1e6 }
func (t Throughput) BatchesS() float64 { return float64(t.Batches) / t.Elapsed.Seconds() }

// RelayThroughput sends n copies of rec through a fresh link of tr (senders
// on a, receivers on b) and times it from the first send to the last receive.
func RelayThroughput(ctx context.Context, a, b relay.Transport, rec arrow.Record, n int) (Throughput, error) {
	l := nextLink()
	r, err := b.OpenReceiver(ctx, l)
	if err != nil {
		return Throughput{}, err
	}
	defer r.Close()
	s, err := a.OpenSender(ctx, l)
	if err != nil {
		return Throughput{}, err
	}
	defer s.Close()
	// Prime the link (first credit, subscriptions) outside the timing.
	if err := s.SendData(ctx, 0, rec); err != nil {
		return Throughput{}, err
	}
	m, err := r.Recv(ctx)
	if err != nil {
		return Throughput{}, err
	}
	m.Record.Release()
	before := s.Stats().Bytes
	done := make(chan error, 1)
	go func() {
		for i := 0; i < n; i++ {
			m, err := r.Recv(ctx)
			if err != nil {
				done <- err
				return
			}
			if m.Record != nil {
				m.Record.Release()
			}
		}
		done <- nil
	}()
	cpu0, start := bench.ProcessCPU(), time.Now()
	for i := 0; i < n; i++ {
		if err := s.SendData(ctx, uint64(i), rec); err != nil {
			return Throughput{}, err
		}
	}
	if err := <-done; err != nil {
		return Throughput{}, err
	}
	return Throughput{Batches: n, Bytes: s.Stats().Bytes - before, Elapsed: time.Since(start), CPU: bench.ProcessCPU() - cpu0}, nil
}

// baselineSubscribe subscribes a baseline's receiver on sub: each message
// goes to on, then signals moved (without waiting: the sender's window
// reads it), with no pending limit (the window bounds what is in flight)
// and the subscription known to the server before the first publish.
func baselineSubscribe(ctx context.Context, sub *nats.Conn, subj string, moved chan<- struct{}, on func(*nats.Msg)) (*nats.Subscription, error) {
	s, err := sub.Subscribe(subj, func(m *nats.Msg) {
		on(m)
		select {
		case moved <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return nil, err
	}
	if err := s.SetPendingLimits(-1, -1); err != nil {
		s.Unsubscribe()
		return nil, err
	}
	if err := sub.FlushWithContext(ctx); err != nil {
		s.Unsubscribe()
		return nil, err
	}
	return s, nil
}

// RawThroughput publishes n messages of perMsg bytes (cut at the server's
// max payload like the relay cuts) from pub to a subscriber on sub and times
// it until the subscriber has seen every byte. Like the relay it keeps at most
// window messages in flight, counted at the subscriber with no protocol at
// all: an unbounded flood would only measure nats-server stalling a fast
// producer, not the cost of moving the bytes.
func RawThroughput(ctx context.Context, pub, sub *nats.Conn, perMsg, n, window int) (Throughput, error) {
	subj := fmt.Sprintf("bench.raw.%d", linkSeq.Add(1))
	maxp := int(pub.MaxPayload())
	chunks := (perMsg + maxp - 1) / maxp
	total := uint64(perMsg) * uint64(n)
	var got, frames atomic.Uint64
	done := make(chan struct{})
	moved := make(chan struct{}, 1)
	s, err := baselineSubscribe(ctx, sub, subj, moved, func(m *nats.Msg) {
		frames.Add(1)
		if got.Add(uint64(len(m.Data))) == total {
			close(done)
		}
	})
	if err != nil {
		return Throughput{}, err
	}
	defer s.Unsubscribe()
	payload := patterned(perMsg)
	inFlight := uint64(max(1, window) * chunks)
	cpu0, start := bench.ProcessCPU(), time.Now()
	sent := uint64(0)
	for i := 0; i < n; i++ {
		for sent >= inFlight && frames.Load() < sent-inFlight+uint64(chunks) {
			select {
			case <-moved:
			case <-ctx.Done():
				return Throughput{}, ctx.Err()
			}
		}
		for off := 0; off < perMsg; off += maxp {
			if err := pub.Publish(subj, payload[off:min(off+maxp, perMsg)]); err != nil {
				return Throughput{}, err
			}
			sent++
		}
	}
	if err := pub.FlushWithContext(ctx); err != nil {
		return Throughput{}, err
	}
	select {
	case <-done:
	case <-ctx.Done():
		return Throughput{}, fmt.Errorf("raw publish: %d of %d bytes arrived: %w", got.Load(), total, ctx.Err())
	}
	return Throughput{Batches: n, Bytes: total, Elapsed: time.Since(start), CPU: bench.ProcessCPU() - cpu0}, nil
}

// RawCreditedThroughput is RawThroughput with its window kept as the relay keeps
// its own, and as the raw baseline across processes does
// (rawThroughputPeer): the subscriber publishes its frame count every
// window/2 messages on a subject of its own, and the publisher waits on
// what comes back over NATS, not on a counter it shares with the
// subscriber in this process. In process that counter is flow control
// for free, which neither the relay (whose credit crosses NATS) nor any
// two workers have; its ratio is the relay's to raw NATS kept as the
// relay is kept (#30, relay49). perMsg must fit one message.
func RawCreditedThroughput(ctx context.Context, pub, sub *nats.Conn, perMsg, n, window int) (Throughput, error) {
	subj := fmt.Sprintf("bench.rawcr.%d", linkSeq.Add(1))
	credit := subj + ".credit"
	window = max(1, window)
	every := uint64(max(1, window/2))
	var acked atomic.Uint64
	moved := make(chan struct{}, 1)
	cs, err := subscribeCredit(pub, credit, &acked, moved)
	if err != nil {
		return Throughput{}, err
	}
	defer func() { _ = cs.Unsubscribe() }()
	if err := pub.FlushWithContext(ctx); err != nil {
		return Throughput{}, err
	}
	total := uint64(perMsg) * uint64(n)
	var got, frames uint64 // the callback's alone: one runs at a time
	var cb [8]byte
	done := make(chan struct{})
	s, err := baselineSubscribe(ctx, sub, subj, make(chan struct{}, 1), func(m *nats.Msg) {
		got += uint64(len(m.Data))
		frames++
		if frames%every == 0 || got == total {
			binary.BigEndian.PutUint64(cb[:], frames)
			_ = sub.Publish(credit, cb[:])
		}
		if got == total {
			close(done)
		}
	})
	if err != nil {
		return Throughput{}, err
	}
	defer s.Unsubscribe()
	payload := patterned(perMsg)
	cpu0, start := bench.ProcessCPU(), time.Now()
	for i := uint64(0); i < uint64(n); i++ {
		for i >= uint64(window) && acked.Load() < i-uint64(window)+1 {
			select {
			case <-moved:
			case <-ctx.Done():
				return Throughput{}, fmt.Errorf("raw publish, credit over NATS: %d of %d acknowledged: %w", acked.Load(), i, ctx.Err())
			}
		}
		if err := pub.Publish(subj, payload); err != nil {
			return Throughput{}, err
		}
	}
	if err := pub.FlushWithContext(ctx); err != nil {
		return Throughput{}, err
	}
	select {
	case <-done:
	case <-ctx.Done():
		return Throughput{}, fmt.Errorf("raw publish, credit over NATS: not all arrived: %w", ctx.Err())
	}
	return Throughput{Batches: n, Bytes: total, Elapsed: time.Since(start), CPU: bench.ProcessCPU() - cpu0}, nil
}

// RawIPCThroughput is RawThroughput for a user of bare NATS who moves the
// Arrow batch itself: each batch is encoded into one reused buffer with the
// relay's own codec (frame.Encoder: the schema once, then the record
// batch) and published as one message; the subscriber decodes it (the
// record points into the message, as the relay's does) and releases it.
// No header, no credit, no acks, no resends, no hand-off to a consumer
// goroutine: the gap between it and the relay is the relay's protocol,
// between it and RawThroughput the encoding and decoding any such user
// pays. A batch must fit one message.
func RawIPCThroughput(ctx context.Context, pub, sub *nats.Conn, mem memory.Allocator, rec arrow.Record, n, window int) (Throughput, error) {
	subj := fmt.Sprintf("bench.rawipc.%d", linkSeq.Add(1))
	var got, arrived atomic.Uint64
	var failed atomic.Pointer[error]
	done := make(chan struct{})
	var finish sync.Once
	moved := make(chan struct{}, 1)
	dec := frame.NewDecoder(mem)
	defer dec.Close()
	s, err := baselineSubscribe(ctx, sub, subj, moved, func(m *nats.Msg) {
		// The first message carries the schema (NATS keeps one
		// publisher's order on a subject).
		r, err := dec.Decode(m.Data, got.Load() == 0)
		if err != nil {
			failed.CompareAndSwap(nil, &err)
			finish.Do(func() { close(done) })
			return
		}
		r.Release()
		arrived.Add(uint64(len(m.Data)))
		if got.Add(1) == uint64(n) {
			finish.Do(func() { close(done) })
		}
	})
	if err != nil {
		return Throughput{}, err
	}
	defer s.Unsubscribe()
	enc := frame.NewEncoder(mem)
	defer enc.Reset()
	var buf bytes.Buffer
	cpu0, start := bench.ProcessCPU(), time.Now()
	for i := 0; i < n; i++ {
		for uint64(i) >= uint64(window) && got.Load() < uint64(i-window+1) && failed.Load() == nil {
			select {
			case <-moved:
			case <-done:
			case <-ctx.Done():
				return Throughput{}, ctx.Err()
			}
		}
		buf.Reset()
		if _, err := enc.Encode(&buf, rec); err != nil {
			return Throughput{}, err
		}
		if buf.Len() > int(pub.MaxPayload()) {
			return Throughput{}, fmt.Errorf("%w: raw IPC: a %d-byte batch is over the server's max payload %d", ErrBadOptions, buf.Len(), pub.MaxPayload())
		}
		if err := pub.Publish(subj, buf.Bytes()); err != nil {
			return Throughput{}, err
		}
	}
	if err := pub.FlushWithContext(ctx); err != nil {
		return Throughput{}, err
	}
	select {
	case <-done:
	case <-ctx.Done():
		return Throughput{}, fmt.Errorf("raw IPC publish: %d of %d batches arrived: %w", got.Load(), n, ctx.Err())
	}
	if e := failed.Load(); e != nil {
		return Throughput{}, fmt.Errorf("raw IPC: decode: %w", *e)
	}
	return Throughput{Batches: n, Bytes: arrived.Load(), Elapsed: time.Since(start), CPU: bench.ProcessCPU() - cpu0}, nil
}

// RelayLatency sends rec k times, one at a time, and returns each one-hop
// time from SendData to Recv.
func RelayLatency(ctx context.Context, a, b relay.Transport, rec arrow.Record, k int) ([]time.Duration, error) {
	l := nextLink()
	r, err := b.OpenReceiver(ctx, l)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	s, err := a.OpenSender(ctx, l)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	out := make([]time.Duration, 0, k)
	for i := 0; i <= k; i++ {
		start := time.Now()
		if err := s.SendData(ctx, uint64(i), rec); err != nil {
			return nil, err
		}
		m, err := r.Recv(ctx)
		if err != nil {
			return nil, err
		}
		d := time.Since(start)
		m.Record.Release()
		if i > 0 { // the first one waits for the first credit
			out = append(out, d)
		}
	}
	return out, nil
}

// RawLatency publishes a perMsg-byte message k times, one at a time, and
// returns each time until the subscriber saw all of it.
func RawLatency(ctx context.Context, pub, sub *nats.Conn, perMsg, k int) ([]time.Duration, error) {
	subj := fmt.Sprintf("bench.rawlat.%d", linkSeq.Add(1))
	arrived := make(chan struct{}, 1)
	var got int
	s, err := sub.Subscribe(subj, func(m *nats.Msg) {
		got += len(m.Data)
		if got >= perMsg {
			got = 0
			arrived <- struct{}{}
		}
	})
	if err != nil {
		return nil, err
	}
	defer s.Unsubscribe()
	if err := sub.FlushWithContext(ctx); err != nil {
		return nil, err
	}
	maxp := int(pub.MaxPayload())
	payload := make([]byte, perMsg)
	out := make([]time.Duration, 0, k)
	for i := 0; i < k; i++ {
		start := time.Now()
		for off := 0; off < perMsg; off += maxp {
			if err := pub.Publish(subj, payload[off:min(off+maxp, perMsg)]); err != nil {
				return nil, err
			}
		}
		select {
		case <-arrived:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}

func percentileUs(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p * float64(len(s)-1))
	return float64(s[i].Nanoseconds()) / 1e3
}

// medianCPU is the median CPU time per MB over measurements.
func medianCPU(ts []Throughput) float64 {
	v := make([]float64, len(ts))
	for i, t := range ts {
		v[i] = t.CPUusPerMB()
	}
	slices.Sort(v)
	return v[len(v)/2]
}

func median(ts []Throughput) Throughput {
	s := slices.Clone(ts)
	slices.SortFunc(s, func(a, b Throughput) int { return int(a.Elapsed - b.Elapsed) })
	return s[len(s)/2]
}

// ErrBadOptions is wrapped by Run for options it cannot use.
var ErrBadOptions = errors.New("relaybench: bad options")

// Run measures every case in every mode and returns, per batch size, the
// NATS row and the in-process backend's row of ModeInProcess and the NATS
// row of ModeProcesses (the in-process backend cannot cross processes).
func Run(ctx context.Context, o Options) ([]Row, error) {
	o.defaults()
	for _, r := range o.Rows {
		if r <= 0 {
			return nil, fmt.Errorf("%w: %d rows per batch", ErrBadOptions, r)
		}
	}
	if o.MaxPayload < 0 {
		return nil, fmt.Errorf("%w: max payload %d", ErrBadOptions, o.MaxPayload)
	}
	procs := false
	for i, m := range o.Modes {
		mode, err := ParseMode(m)
		if err != nil {
			return nil, err
		}
		o.Modes[i] = mode
		procs = procs || mode == ModeProcesses
	}
	if procs && o.Peer == nil {
		return nil, fmt.Errorf("%w: mode %s needs Options.Peer to start the peer process", ErrBadOptions, ModeProcesses)
	}
	env, err := NewEnv(o.URL, o.MaxPayload, o.NATS...)
	if err != nil {
		return nil, err
	}
	defer env.Close()
	cfg := relay.Config{Window: o.Window, Allocator: o.Allocator}
	a := natsrelay.New(env.pub, natsrelay.Options{Config: cfg})
	b := natsrelay.New(env.sub, natsrelay.Options{Config: cfg})
	ip := inproc.New(cfg)
	defer a.Close()
	defer b.Close()
	defer ip.Close()
	var p *peer
	if procs {
		// The peer's reports come in on the receiving side's connection,
		// which across processes carries nothing else.
		url := o.URL // as given: ConnectedUrl drops credentials
		if url == "" {
			url = env.pub.ConnectedUrl()
		}
		if p, err = startPeer(ctx, &o, env.sub, url); err != nil {
			return nil, err
		}
		defer p.stop()
	}
	o.logf("relay bench: NATS %s (max payload %d), window %s, %d MB per measurement, %d rounds, modes %s",
		natsserver.Redact(env.pub.ConnectedUrl()), env.pub.MaxPayload(), windowName(o.Window), o.MB, o.Rounds, strings.Join(o.Modes, ", "))
	var rows []Row
	for _, nrows := range o.Rows {
		rec := Record(o.Allocator, nrows)
		got, err := runSize(ctx, &o, env, a, b, ip, p, rec)
		rec.Release()
		if err != nil {
			return nil, err
		}
		rows = append(rows, got...)
	}
	return rows, nil
}

// runSize measures one batch size in every mode.
func runSize(ctx context.Context, o *Options, env *Env, a, b, ip relay.Transport, p *peer, rec arrow.Record) ([]Row, error) {
	nrows := int(rec.NumRows())
	mctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	// One probe batch tells the wire size, which sets the count and the raw
	// message size.
	probe, err := RelayThroughput(mctx, a, b, rec, 1)
	if err != nil {
		return nil, err
	}
	per := int(probe.Bytes)
	n := max(20, o.MB*1_000_000/per)
	o.logf("case %d rows: %.1f KB per batch on the wire, %d batches", nrows, float64(per)/1e3, n)
	var rows []Row
	for _, mode := range o.Modes {
		if mode == ModeInProcess {
			natsRow, ipRow, err := runCase(mctx, o, env, a, b, ip, rec, per, n)
			if err != nil {
				return nil, err
			}
			rows = append(rows, natsRow, ipRow)
			continue
		}
		row, err := runCasePeer(mctx, o, env, a, p, rec, per, n)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// natsRow fills the NATS row of a case from its measurements.
func natsRow(mode string, nrows, per, n int, relayT, rawT []Throughput, lat, rawLat []time.Duration) Row {
	rl, raw := median(relayT), median(rawT)
	r := Row{
		Mode: mode, Backend: "nats", Case: fmt.Sprintf("nats/%d", nrows), Rows: nrows, BatchKB: float64(per) / 1e3, Batches: n,
		BatchesS: rl.BatchesS(), RelayMBs: rl.MBs(), RawMBs: raw.MBs(), Ratio: rl.MBs() / raw.MBs(),
		P50us: percentileUs(lat, 0.5), P99us: percentileUs(lat, 0.99),
		RawP50us: percentileUs(rawLat, 0.5), RawP99us: percentileUs(rawLat, 0.99),
	}
	r.AddedP50s, r.AddedP99s = r.P50us-r.RawP50us, r.P99us-r.RawP99us
	r.CPUusMB, r.RawCPUusMB = medianCPU(relayT), medianCPU(rawT)
	if r.CPUusMB > 0 {
		r.CPURatio = r.RawCPUusMB / r.CPUusMB
	}
	return r
}

func (o *Options) logRow(r Row) {
	if r.RawSameMBs > 0 {
		o.logf("  %s: raw with %d in flight (the relay's bytes; raw NATS below keeps %d) %.0f MB/s, %.0f CPU-µs/MB: the relay's ratio to it %.2f, cpu ratio %.2f",
			r.Mode, r.SameWindow, r.RawWindow, r.RawSameMBs, r.RawSameCPUusMB, r.SameRatio, r.SameCPURatio)
	}
	if r.RawIPCMBs > 0 {
		o.logf("  %s: raw with Arrow IPC %.0f MB/s: the relay's ratio to it %.2f", r.Mode, r.RawIPCMBs, r.IPCRatio)
	}
	if r.RawCreditedMBs > 0 {
		o.logf("  %s: raw with the relay's window kept over NATS, as the relay's credit is, %.0f MB/s, %.0f CPU-µs/MB: the relay's ratio to it %.2f",
			r.Mode, r.RawCreditedMBs, r.RawCreditedCPUusMB, r.CreditedRatio)
	}
	o.logf("  %s: relay %.0f MB/s vs raw %.0f MB/s: ratio %.2f; CPU %.0f vs %.0f µs/MB: cpu ratio %.2f; p50 %.0f µs vs raw %.0f µs, p99 %.0f µs vs raw %.0f µs",
		r.Mode, r.RelayMBs, r.RawMBs, r.Ratio, r.CPUusMB, r.RawCPUusMB, r.CPURatio, r.P50us, r.RawP50us, r.P99us, r.RawP99us)
}

func runCase(ctx context.Context, o *Options, env *Env, a, b, ip relay.Transport, rec arrow.Record, per, n int) (Row, Row, error) {
	nrows := int(rec.NumRows())
	var relayT, rawT, ipT, rawIPCT, sameT, credT []Throughput
	rawW, sameW := rawWindow(o.Window), relayWindow(o.Window, per)
	for round := 0; round < o.Rounds; round++ {
		raw, err := RawThroughput(ctx, env.pub, env.sub, per, n, rawW)
		if err != nil {
			return Row{}, Row{}, err
		}
		var cred Throughput
		if per <= int(env.pub.MaxPayload()) {
			if cred, err = RawCreditedThroughput(ctx, env.pub, env.sub, per, n, sameW); err != nil {
				return Row{}, Row{}, err
			}
			credT = append(credT, cred)
		}
		if sameW != rawW {
			same, err := RawThroughput(ctx, env.pub, env.sub, per, n, sameW)
			if err != nil {
				return Row{}, Row{}, err
			}
			sameT = append(sameT, same)
		}
		// The baseline that encodes the batch sends it in one message; a
		// batch the relay chunks has none.
		var rawIPC Throughput
		if per <= int(env.pub.MaxPayload()) {
			if rawIPC, err = RawIPCThroughput(ctx, env.pub, env.sub, o.Allocator, rec, n, rawW); err != nil {
				return Row{}, Row{}, err
			}
			// Over the relay's wire bytes, so its MB/s compare batch for batch.
			rawIPC.Bytes = uint64(per) * uint64(n)
			rawIPCT = append(rawIPCT, rawIPC)
		}
		rl, err := RelayThroughput(ctx, a, b, rec, n)
		if err != nil {
			return Row{}, Row{}, err
		}
		// In process a batch costs under a microsecond: run enough of them
		// for the clock to see.
		in, err := RelayThroughput(ctx, ip, ip, rec, max(n, 20000))
		if err != nil {
			return Row{}, Row{}, err
		}
		rawT, relayT, ipT = append(rawT, raw), append(relayT, rl), append(ipT, in)
		ipcMBs := 0.0
		if rawIPC.Elapsed > 0 {
			ipcMBs = rawIPC.MBs()
		}
		credMBs := 0.0
		if cred.Elapsed > 0 {
			credMBs = cred.MBs()
		}
		o.logf("  %s round %d: raw %.0f MB/s, raw with its window over NATS %.0f MB/s, raw with Arrow IPC %.0f MB/s, relay %.0f MB/s, in-process backend %.0f batches/s",
			ModeInProcess, round+1, raw.MBs(), credMBs, ipcMBs, rl.MBs(), in.BatchesS())
		o.tick("%d rows, %s, round %d", nrows, ModeInProcess, round+1)
	}
	lat, err := RelayLatency(ctx, a, b, rec, o.Latency)
	if err != nil {
		return Row{}, Row{}, err
	}
	rawLat, err := RawLatency(ctx, env.pub, env.sub, per, o.Latency)
	if err != nil {
		return Row{}, Row{}, err
	}
	ipLat, err := RelayLatency(ctx, ip, ip, rec, o.Latency)
	if err != nil {
		return Row{}, Row{}, err
	}
	o.tick("%d rows, %s, latency", nrows, ModeInProcess)
	nr := natsRow(ModeInProcess, nrows, per, n, relayT, rawT, lat, rawLat)
	nr.sameWindow(rawW, sameW, sameT)
	if len(rawIPCT) > 0 {
		nr.RawIPCMBs = median(rawIPCT).MBs()
		nr.IPCRatio = nr.RelayMBs / nr.RawIPCMBs
	}
	if len(credT) > 0 {
		nr.RawCreditedMBs, nr.RawCreditedCPUusMB = median(credT).MBs(), medianCPU(credT)
		nr.CreditedRatio = nr.RelayMBs / nr.RawCreditedMBs
	}
	// In process nothing is serialised; its MB/s counts the same wire bytes
	// per batch as the NATS row, so the two rows compare batch for batch.
	raw, in := median(rawT), median(ipT)
	ipMBs := in.BatchesS() * float64(per) / 1e6
	ipRow := Row{
		Mode: ModeInProcess, Backend: "inproc", Case: fmt.Sprintf("inproc/%d", nrows), Rows: nrows, BatchKB: float64(per) / 1e3, Batches: n,
		BatchesS: in.BatchesS(), RelayMBs: ipMBs, RawMBs: raw.MBs(), Ratio: ipMBs / raw.MBs(),
		P50us: percentileUs(ipLat, 0.5), P99us: percentileUs(ipLat, 0.99), RawP50us: nr.RawP50us, RawP99us: nr.RawP99us,
	}
	ipRow.AddedP50s, ipRow.AddedP99s = ipRow.P50us-nr.RawP50us, ipRow.P99us-nr.RawP99us
	ipRow.CPUusMB, ipRow.RawCPUusMB = medianCPU(ipT)*float64(in.Bytes)/float64(uint64(in.Batches)*uint64(per)), nr.RawCPUusMB
	if ipRow.CPUusMB > 0 {
		ipRow.CPURatio = ipRow.RawCPUusMB / ipRow.CPUusMB
	}
	o.logRow(nr)
	return nr, ipRow, nil
}

// runCasePeer is runCase across processes: this process sends, the peer
// receives. CPU time is both processes' together.
func runCasePeer(ctx context.Context, o *Options, env *Env, a relay.Transport, p *peer, rec arrow.Record, per, n int) (Row, error) {
	nrows := int(rec.NumRows())
	var relayT, rawT, sameT []Throughput
	rawW, sameW := rawWindow(o.Window), relayWindow(o.Window, per)
	for round := 0; round < o.Rounds; round++ {
		raw, err := rawMovedPeer(ctx, p, env.pub, per, n, rawW)
		if err != nil {
			return Row{}, err
		}
		rawT = append(rawT, raw)
		if sameW != rawW {
			same, err := rawMovedPeer(ctx, p, env.pub, per, n, sameW)
			if err != nil {
				return Row{}, err
			}
			sameT = append(sameT, same)
		}
		rl, err := relayThroughputPeer(ctx, p, a, rec, n, o.Window)
		if err != nil {
			return Row{}, err
		}
		if rl.Got.Batches != uint64(n) || rl.Got.Rows != uint64(n*nrows) || rl.Got.Bytes != rl.Bytes {
			return Row{}, fmt.Errorf("%w: relay: %d batches, %d rows and %d bytes arrived, %d, %d and %d sent",
				ErrPeer, rl.Got.Batches, rl.Got.Rows, rl.Got.Bytes, n, n*nrows, rl.Bytes)
		}
		relayT = append(relayT, rl.Throughput)
		o.logf("  %s round %d: raw %.0f MB/s, relay %.0f MB/s", ModeProcesses, round+1, raw.MBs(), rl.MBs())
		o.tick("%d rows, %s, round %d", nrows, ModeProcesses, round+1)
	}
	lat, err := relayLatencyPeer(ctx, p, a, rec, o.Latency, o.Window)
	if err != nil {
		return Row{}, err
	}
	rawLat, err := rawLatencyPeer(ctx, p, env.pub, per, o.Latency)
	if err != nil {
		return Row{}, err
	}
	o.tick("%d rows, %s, latency", nrows, ModeProcesses)
	r := natsRow(ModeProcesses, nrows, per, n, relayT, rawT, lat, rawLat)
	r.sameWindow(rawW, sameW, sameT)
	o.logRow(r)
	return r, nil
}

// rawWindow is what the raw baseline keeps in flight: the relay's fixed
// window, or its default one where the relay's grows.
func rawWindow(window int) int {
	if window <= 0 {
		return relay.DefaultWindow
	}
	return window
}

// rawMovedPeer is rawThroughputPeer checked: every message arrived.
func rawMovedPeer(ctx context.Context, p *peer, pub *nats.Conn, per, n, window int) (Throughput, error) {
	raw, err := rawThroughputPeer(ctx, p, pub, per, n, window)
	if err != nil {
		return Throughput{}, err
	}
	if raw.Got.Batches != uint64(n) || raw.Got.Bytes != uint64(per)*uint64(n) {
		return Throughput{}, fmt.Errorf("%w: raw: %d messages and %d bytes arrived, %d and %d sent", ErrPeer, raw.Got.Batches, raw.Got.Bytes, n, per*n)
	}
	return raw.Throughput, nil
}

// relayWindow is how many messages of per wire bytes the relay keeps in
// flight once its window has grown (relay.Config's WindowBytes of them,
// between Window and MaxWindow), or its fixed window.
func relayWindow(window, per int) int {
	if window > 0 {
		return window
	}
	return relay.Config{}.WithDefaults().GrownWindow(int64(per))
}

// sameWindow fills the fields of raw NATS with the relay's in-flight bytes
// (sameT, measured where sameW differs from rawW).
func (r *Row) sameWindow(rawW, sameW int, sameT []Throughput) {
	r.RawWindow = rawW
	if sameW == rawW || len(sameT) == 0 {
		return
	}
	same := median(sameT)
	r.SameWindow, r.RawSameMBs, r.RawSameCPUusMB = sameW, same.MBs(), medianCPU(sameT)
	r.SameRatio = r.RelayMBs / r.RawSameMBs
	if r.CPUusMB > 0 {
		r.SameCPURatio = r.RawSameCPUusMB / r.CPUusMB
	}
}

func windowName(window int) string {
	if window <= 0 {
		return fmt.Sprintf("%d-%d messages (by bytes)", relay.DefaultWindow, relay.DefaultMaxWindow)
	}
	return strconv.Itoa(window)
}

// subscribeCredit keeps acked at the highest count the receiver reported on
// credit (an 8-byte big-endian count) and signals moved on each report.
func subscribeCredit(nc *nats.Conn, credit string, acked *atomic.Uint64, moved chan<- struct{}) (*nats.Subscription, error) {
	return nc.Subscribe(credit, func(m *nats.Msg) {
		if len(m.Data) == 8 {
			if v := binary.BigEndian.Uint64(m.Data); v > acked.Load() {
				acked.Store(v)
			}
		}
		select {
		case moved <- struct{}{}:
		default:
		}
	})
}

// patterned is n bytes counting up (mod 256): a payload no compression
// or page sharing makes cheaper than its size.
func patterned(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}
