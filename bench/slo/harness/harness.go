// Package harness is `tierflow bench slo --harness`: latency-SLO serving over
// changing networks (Jellyfish) in a client/server harness of its own, not
// the engine. It measures what the engine path of `bench slo` does not:
// several server workers sharing one earliest-deadline-first queue, each
// client assigned a worker and a variant by the Jellyfish scheduler, and
// frames put on the link as uint8 (--encode). N edge clients send labelled frames at a rate, each
// over its own relay link to one edge server, every link throttled to a
// bandwidth trace (relay.TraceShaper: real NATS traffic, delayed by the
// time its bytes take); the server runs a zoo of variants with ONNX
// Runtime on K workers and answers each frame, or drops it lazily once it
// can no longer meet its deadline. A policy decides what each client sends
// and which variant serves it:
//
//   - adaptive: the Jellyfish scheduler (control.JFProblem.Schedule) every
//     Period, and at once when a client's link no longer carries what it
//     sends (a drift trigger), from each link's bandwidth as its acks
//     measure it; a client sends at its variant's input size (data
//     adaptation), and a new decision takes effect from the next epoch on,
//     so every frame put on a link in an epoch goes under one decision;
//   - static-smallest, -middle, -largest: one variant on every worker,
//     frames at its full input size (the paper's B_L, B_M, B_H).
//
// Every policy serves frames earliest deadline first (the deadline is the
// frame's capture plus the SLO: network-aware), from one queue the next
// free worker takes from, and drops a frame lazily once it can no longer
// make its deadline.
//
// The response (a label and a score, tens of bytes) is not sent back over
// the shaped link: as in the paper, the network time is the upload's.
//
// harness imports relay, runtime/onnx, runtime/control and operators/ml;
// never cmd.
package harness

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/relay/natsrelay"
	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/onnx"
)

// ErrConfig is the kind of a bad configuration.
var ErrConfig = errors.New("slo: bad configuration")

// Policies, in the order the bench runs them.
var Policies = []string{"adaptive", "static-smallest", "static-middle", "static-largest"}

// Variant is one model of the zoo, smallest first.
type Variant struct {
	Name string
	// Path is its ONNX file; Side its input size (Side x Side float32).
	Path     string
	Side     int
	Accuracy float64 // [0, 1], as the catalog records it
	// BatchMs[b-1] is one call of b rows (the catalog's by_batch P90,
	// made non-decreasing).
	BatchMs []float64
}

// Config is one run.
type Config struct {
	Policy  string
	Clients int
	Workers int
	SLO     time.Duration
	Rate    float64 // frames per second per client
	Trace   *relay.Trace
	// Duration is how long the clients send (default: the trace's period,
	// at least 30 s).
	Duration time.Duration
	Variants []Variant
	// Images are 28x28 frames in [0, 1] and Labels their classes; client i
	// starts at image i*len/N.
	Images []float32
	Labels []uint8
	Env    *onnx.Env
	// Period is the scheduler's (default 500ms); Epoch the cut-over grain
	// (default 100ms).
	Period, Epoch time.Duration
	// MaxUtilization caps the share of a link's estimated bandwidth a
	// client's frames may take (default 0.7): past 1 its queue grows
	// without bound, and the estimate lags a drop.
	MaxUtilization float64
	// Uint8 has clients send one byte a pixel instead of float32 (a
	// quarter of the bytes; pixels within 1/510 of their value).
	Uint8 bool
	// Timeline, when set, receives one row per client per scheduling
	// round (EXPLAIN ANALYZE's bandwidth and variant over time).
	Timeline func(TimelineRow)
}

// TimelineRow is one client at one scheduling round.
type TimelineRow struct {
	AtS          float64 `json:"t_s"`
	Client       int     `json:"client"`
	ShapedKbit   float64 `json:"shaped_kbit_s"`
	EstimateKbit float64 `json:"estimated_kbit_s"`
	Variant      string  `json:"variant"`
	Side         int     `json:"side"`
}

// Result is one run's row of the bench.
type Result struct {
	Policy      string  `json:"policy"`
	Clients     int     `json:"clients"`
	SLOMs       float64 `json:"slo_ms"`
	Requests    int     `json:"requests"`
	SLOMissRate float64 `json:"slo_miss_rate"`
	Accuracy    float64 `json:"accuracy"`
	P50Ms       float64 `json:"p50_ms"`
	P99Ms       float64 `json:"p99_ms"`
	// Per client, for EXPLAIN ANALYZE.
	PerClient []ClientResult `json:"-"`
	// Ran are the frames each variant answered, by name (the engine's
	// adaptive runs; empty where one variant answered them all).
	Ran map[string]int64 `json:"-"`
}

// ClientResult is one client's share of a Result.
type ClientResult struct {
	// Missed counts the late, the Dropped (lazily, before compute) and the
	// Lost (sent, never answered by the end of the run). ClientDropped are
	// the Dropped that the client did not send.
	Requests, Missed, Dropped, ClientDropped, Lost, Correct int
	Latencies                                               []float64
}

// decision is what one client does from epoch on.
type decision struct {
	epoch   int64
	variant int
	worker  int
}

// frame is one request as the server sees it.
type frame struct {
	client, id int
	truth      uint8
	variant    int
	worker     int
	ingest     time.Time
	deadline   time.Time
	pixels     []float32
}

var frameSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "truth", Type: arrow.PrimitiveTypes.Uint8},
	{Name: "variant", Type: arrow.PrimitiveTypes.Int16},
	{Name: "worker", Type: arrow.PrimitiveTypes.Int16},
	// The frame's pixels at its variant's input size, float32 little
	// endian or (Config.Uint8) a byte each: what crosses the link.
	{Name: "image", Type: arrow.BinaryTypes.Binary},
}, nil)

func (c *Config) defaults() error {
	if c.Workers < 1 {
		c.Workers = 2
	}
	if c.Period <= 0 {
		c.Period = 500 * time.Millisecond
	}
	if c.Epoch <= 0 {
		c.Epoch = 100 * time.Millisecond
	}
	if c.MaxUtilization <= 0 {
		c.MaxUtilization = 0.7
	}
	if c.Duration <= 0 && c.Trace != nil {
		c.Duration = max(c.Trace.Period, 30*time.Second)
	}
	switch {
	case c.Clients < 1:
		return fmt.Errorf("%w: %d clients", ErrConfig, c.Clients)
	case c.Rate <= 0 || c.SLO <= 0:
		return fmt.Errorf("%w: rate %v, SLO %v", ErrConfig, c.Rate, c.SLO)
	case c.Trace == nil:
		return fmt.Errorf("%w: no trace", ErrConfig)
	case len(c.Variants) == 0:
		return fmt.Errorf("%w: no variants", ErrConfig)
	case len(c.Images) < 784 || len(c.Images)/784 != len(c.Labels):
		return fmt.Errorf("%w: %d images for %d labels", ErrConfig, len(c.Images)/784, len(c.Labels))
	}
	for _, p := range Policies {
		if p == c.Policy {
			return nil
		}
	}
	return fmt.Errorf("%w: unknown policy %q (want one of %v)", ErrConfig, c.Policy, Policies)
}

// staticVariant is the one variant of a static policy, -1 for adaptive.
func (c *Config) staticVariant() int {
	switch c.Policy {
	case "static-smallest":
		return 0
	case "static-middle":
		return len(c.Variants) / 2
	case "static-largest":
		return len(c.Variants) - 1
	}
	return -1
}

// Run runs one policy and returns its row.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		return nil, err
	}
	defer srv.Shutdown()
	r := &run{cfg: cfg, static: cfg.staticVariant(), mem: memory.NewGoAllocator(), replan: make(chan struct{}, 1)}
	return r.run(ctx, srv)
}

type run struct {
	cfg    Config
	static int
	mem    memory.Allocator
	start  time.Time

	mu        sync.Mutex
	decisions [][]decision // per client, by epoch
	results   []ClientResult
	senders   []relay.Sender
	shapers   []relay.TraceShaper
	queues    *queues
	// replan wakes the scheduler before its period when a client's link
	// no longer carries what its decision sends (a drift trigger).
	replan chan struct{}
}

func (r *run) epochOf(t time.Time) int64 { return int64(t.Sub(r.start) / r.cfg.Epoch) }

// decisionAt is client i's decision for a frame of epoch e.
func (r *run) decisionAt(i int, e int64) decision {
	r.mu.Lock()
	defer r.mu.Unlock()
	ds := r.decisions[i]
	d := ds[0]
	for _, x := range ds {
		if x.epoch <= e {
			d = x
		}
	}
	return d
}

func (r *run) run(ctx context.Context, srv *natsserver.Server) (*Result, error) {
	cfg := r.cfg
	n := cfg.Clients
	// The server: one connection, one receiver per client link, K workers.
	snc, err := srv.Connect(nats.Name("slo-server"))
	if err != nil {
		return nil, err
	}
	defer snc.Close()
	server := natsrelay.New(snc, natsrelay.Options{Config: relay.Config{Allocator: r.mem}})
	defer server.Close()
	r.results = make([]ClientResult, n)
	r.decisions = make([][]decision, n)
	first := r.static
	if first < 0 {
		first = 0 // the bootstrap set: the smallest variant (Jellyfish 4.3)
	}
	for i := range r.decisions {
		r.decisions[i] = []decision{{epoch: 0, variant: first, worker: i % cfg.Workers}}
	}
	sessions, err := r.sessions()
	if err != nil {
		return nil, err
	}
	r.start = time.Now()
	var recvs []relay.Receiver
	for i := 0; i < n; i++ {
		l := relay.LinkID{Query: "slo", Edge: 0, Sender: uint32(i), Receiver: 0}
		rc, err := server.OpenReceiver(ctx, l)
		if err != nil {
			return nil, err
		}
		recvs = append(recvs, rc)
	}
	// The clients: each its own connection (its own machine) and a link
	// shaped to the trace, client i i/N of a period into it.
	for i := 0; i < n; i++ {
		nc, err := srv.Connect(nats.Name(fmt.Sprintf("slo-client-%d", i)))
		if err != nil {
			return nil, err
		}
		defer nc.Close()
		sh := relay.TraceShaper{Trace: cfg.Trace, Start: r.start, Offset: cfg.Trace.Period * time.Duration(i) / time.Duration(n)}
		r.shapers = append(r.shapers, sh)
		tr := natsrelay.New(nc, natsrelay.Options{Config: relay.Config{Allocator: r.mem}, Shaper: func(relay.LinkID) relay.Shaper { return sh }})
		defer tr.Close()
		s, err := tr.OpenSender(ctx, relay.LinkID{Query: "slo", Edge: 0, Sender: uint32(i), Receiver: 0})
		if err != nil {
			return nil, err
		}
		r.senders = append(r.senders, s)
	}
	r.start = time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// One queue in deadline order for all workers, whatever the policy:
	// the workers share this machine's cores and hold every variant, so
	// the next free one takes the most urgent frame (the dispatcher); the
	// schedule decides variants, input sizes and batch sizes.
	r.queues = newQueues(cfg.Workers, true)
	r.queues.dropped = r.dropped
	var wg sync.WaitGroup
	errc := make(chan error, 4*n+cfg.Workers+1)
	for i := 0; i < n; i++ {
		wg.Add(2)
		go func(i int) { defer wg.Done(); errc <- r.client(ctx, i) }(i)
		go func(i int) { defer wg.Done(); errc <- r.receive(ctx, i, recvs[i]) }(i)
	}
	var wwg sync.WaitGroup
	for k := 0; k < cfg.Workers; k++ {
		wwg.Add(1)
		go func(k int) { defer wwg.Done(); errc <- r.worker(ctx, k, sessions) }(k)
	}
	if r.static < 0 {
		wg.Add(1)
		go func() { defer wg.Done(); r.schedule(ctx) }()
	}
	if cfg.Timeline != nil {
		wg.Add(1)
		go func() { defer wg.Done(); r.monitor(ctx) }()
	}
	// Clients send for Duration; then what is still queued or in flight
	// gets one SLO (and a second for the slowest link) to arrive.
	deadline := r.start.Add(cfg.Duration + cfg.SLO + time.Second)
	select {
	case <-time.After(time.Until(deadline)):
	case <-ctx.Done():
	}
	cancel()
	r.queues.close()
	wg.Wait()
	wwg.Wait()
	close(errc)
	for err := range errc {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
	}
	return r.result(), nil
}

// sessions opens every variant once per worker (the zoo preloaded: a
// change of variant loads nothing, Jellyfish 4.4).
func (r *run) sessions() ([][]*onnx.Session, error) {
	out := make([][]*onnx.Session, r.cfg.Workers)
	for k := range out {
		for _, v := range r.cfg.Variants {
			s, err := r.cfg.Env.Session(v.Path, onnx.Options{Device: onnx.CPU, IntraOpThreads: 1})
			if err != nil {
				return nil, fmt.Errorf("variant %s: %w", v.Name, err)
			}
			// Warm it up at the batch sizes it will see: ONNX Runtime's
			// first call at a shape allocates and plans, which would
			// otherwise stall the first frames after a change of variant.
			for b := 1; b <= 16; b *= 2 {
				in := ml.Tensor{DType: ml.Float32, Shape: []int64{int64(b), 1, int64(v.Side), int64(v.Side)}, F32: make([]float32, b*v.Side*v.Side)}
				if err := s.Run([]ml.Tensor{in}, make([]ml.Tensor, len(s.Outputs()))); err != nil {
					return nil, fmt.Errorf("variant %s: %w", v.Name, err)
				}
			}
			out[k] = append(out[k], s)
		}
	}
	return out, nil
}

// client sends frame k of client i at start + k/rate (stamped with that
// ingest time), resized to its decision's variant; a slow link makes
// frames wait here, as on a camera behind a slow uplink.
func (r *run) client(ctx context.Context, i int) error {
	cfg := r.cfg
	images := len(cfg.Labels)
	next := i * images / cfg.Clients
	var buf []float32
	for k := 0; ; k++ {
		at := r.start.Add(time.Duration(float64(k) / cfg.Rate * float64(time.Second)))
		if at.Sub(r.start) >= cfg.Duration {
			return nil
		}
		if d := time.Until(at); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil
			}
		}
		img := next % images
		next++
		r.mu.Lock()
		r.results[i].Requests++
		r.mu.Unlock()
		// The frame goes out under the decision of the epoch it is put on
		// the link in (a frame that waited behind a slow link takes the
		// newest size), and not at all once its deadline has passed while
		// it waited: on a link that just dropped, a dead frame would only
		// delay the ones behind it.
		now := time.Now()
		e := r.epochOf(now)
		d := r.decisionAt(i, e)
		v := cfg.Variants[d.variant]
		if r.static < 0 && d.variant > 0 {
			// The link no longer carries this size at this rate: ask for a
			// new schedule now rather than at the next period.
			if bw := r.linkBps(i); bw > 0 && cfg.Rate*(r.pixelBytes(v.Side)+r.wireOverhead()) > cfg.MaxUtilization*bw {
				select {
				case r.replan <- struct{}{}:
				default:
				}
			}
		}
		if !now.Before(at.Add(cfg.SLO)) {
			r.mu.Lock()
			r.results[i].Dropped++
			r.results[i].Missed++
			r.results[i].ClientDropped++
			r.mu.Unlock()
			continue
		}
		buf = ml.ResizeArea(buf, cfg.Images[img*784:(img+1)*784], 28, v.Side)
		rec := r.record(k, cfg.Labels[img], d, buf)
		err := r.senders[i].SendDataAt(ctx, uint64(e), at.UnixNano(), rec)
		rec.Release()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

func (r *run) record(id int, truth uint8, d decision, px []float32) arrow.Record {
	b := array.NewRecordBuilder(r.mem, frameSchema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(int64(id))
	b.Field(1).(*array.Uint8Builder).Append(truth)
	b.Field(2).(*array.Int16Builder).Append(int16(d.variant))
	b.Field(3).(*array.Int16Builder).Append(int16(d.worker))
	var raw []byte
	if r.cfg.Uint8 {
		raw = ml.EncodeUint8(make([]byte, 0, len(px)), px)
	} else {
		raw = make([]byte, 4*len(px))
		for j, v := range px {
			u := math.Float32bits(v)
			raw[4*j], raw[4*j+1], raw[4*j+2], raw[4*j+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
		}
	}
	b.Field(4).(*array.BinaryBuilder).Append(raw)
	return b.NewRecord()
}

// receive takes client i's frames off its link and queues them for the
// workers.
func (r *run) receive(ctx context.Context, i int, rc relay.Receiver) error {
	for {
		m, err := rc.Recv(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		rec := m.Record
		raw := rec.Column(4).(*array.Binary).Value(0)
		var px []float32
		if side := r.cfg.Variants[rec.Column(2).(*array.Int16).Value(0)].Side; len(raw) == side*side {
			px = ml.DecodeUint8(make([]float32, 0, len(raw)), raw) // one byte a pixel
		} else {
			px = make([]float32, len(raw)/4)
			for j := range px {
				px[j] = math.Float32frombits(uint32(raw[4*j]) | uint32(raw[4*j+1])<<8 | uint32(raw[4*j+2])<<16 | uint32(raw[4*j+3])<<24)
			}
		}
		ingest := time.Unix(0, m.Ingest)
		f := &frame{client: i, id: int(rec.Column(0).(*array.Int64).Value(0)), truth: rec.Column(1).(*array.Uint8).Value(0),
			variant: int(rec.Column(2).(*array.Int16).Value(0)), worker: int(rec.Column(3).(*array.Int16).Value(0)),
			ingest: ingest, deadline: ingest.Add(r.cfg.SLO), pixels: px}
		rec.Release()
		r.queues.push(f)
	}
}

// worker serves frames earliest deadline first: it drops, before any
// compute, a frame that cannot make its deadline even alone (counted as a
// miss), and runs the largest batch of one variant whose every frame still
// makes its deadline.
func (r *run) worker(ctx context.Context, k int, sessions [][]*onnx.Session) error {
	var in []float32
	for {
		batch := r.queues.take(k, func(fs []*frame) ([]*frame, []*frame) { return r.pick(fs) })
		if batch == nil {
			return nil
		}
		v := r.cfg.Variants[batch[0].variant]
		in = in[:0]
		for _, f := range batch {
			in = append(in, f.pixels...)
		}
		sess := sessions[k][batch[0].variant]
		outs := make([]ml.Tensor, len(sess.Outputs()))
		err := sess.Run([]ml.Tensor{{DType: ml.Float32, Shape: []int64{int64(len(batch)), 1, int64(v.Side), int64(v.Side)}, F32: in}}, outs)
		done := time.Now()
		if err != nil {
			return fmt.Errorf("variant %s: %w", v.Name, err)
		}
		probs := outs[0]
		for j, o := range sess.Outputs() {
			if o.Name == "probs" {
				probs = outs[j]
			}
		}
		classes := len(probs.F32) / len(batch)
		r.mu.Lock()
		for j, f := range batch {
			c := &r.results[f.client]
			lat := done.Sub(f.ingest)
			c.Latencies = append(c.Latencies, float64(lat)/float64(time.Millisecond))
			if lat > r.cfg.SLO {
				c.Missed++
				continue
			}
			if argmax(probs.F32[j*classes:(j+1)*classes]) == int(f.truth) {
				c.Correct++
			}
		}
		r.mu.Unlock()
	}
}

// pick chooses the next batch from a queue in deadline order: the frames
// that can no longer be served in time are dropped; of the rest, the
// first frame's variant runs with as many of the following frames of that
// variant as the deadline of each allows.
func (r *run) pick(fs []*frame) (batch, drop []*frame) {
	now := time.Now()
	var keep []*frame
	for _, f := range fs {
		v := r.cfg.Variants[f.variant]
		if now.Add(ms(v.BatchMs[0])).After(f.deadline) {
			drop = append(drop, f)
		} else {
			keep = append(keep, f)
		}
	}
	if len(keep) == 0 {
		return nil, drop
	}
	j := keep[0].variant
	v := r.cfg.Variants[j]
	var same []*frame
	for _, f := range keep {
		if f.variant == j && len(same) < len(v.BatchMs) {
			same = append(same, f)
		}
	}
	// The largest prefix (deadline order) whose earliest deadline holds
	// at that batch size.
	b := 1
	for n := len(same); n >= 1; n-- {
		if !now.Add(ms(v.BatchMs[n-1])).After(same[0].deadline) {
			b = n
			break
		}
	}
	return same[:b], drop
}

func (r *run) dropped(fs []*frame) {
	r.mu.Lock()
	for _, f := range fs {
		r.results[f.client].Dropped++
		r.results[f.client].Missed++
	}
	r.mu.Unlock()
}

// schedule is the adaptive policy: every Period it builds the scheduling
// problem from the clients' links (bandwidth from acks, as Jellyfish's
// client daemons report it) and applies the schedule from the next epoch.
func (r *run) schedule(ctx context.Context) {
	t := time.NewTicker(r.cfg.Period)
	defer t.Stop()
	var prev []int
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-r.replan:
			// At most one triggered round per epoch: a decision needs an
			// epoch to take effect and a few acks to show.
			if time.Since(last) < r.cfg.Epoch {
				continue
			}
		}
		last = time.Now()
		p := r.problem()
		s := p.Schedule(prev, control.JFAnneal{T0: control.DefaultJFAnneal.T0, TMin: control.DefaultJFAnneal.TMin, Alpha: control.DefaultJFAnneal.Alpha, Seed: uint64(time.Since(r.start))})
		prev = prev[:0]
		for _, w := range s.Workers {
			prev = append(prev, w.Variant)
		}
		now := time.Now()
		e := r.epochOf(now) + 1
		r.mu.Lock()
		for i := range r.decisions {
			d := decision{epoch: e, variant: 0, worker: i % r.cfg.Workers}
			if w := s.Client[i]; w >= 0 {
				d.variant, d.worker = s.Workers[w].Variant, w
			}
			// A client no variant can serve in time sends its smallest
			// frames: the ones with the best chance.
			r.decisions[i] = append(r.decisions[i], d)
		}
		r.mu.Unlock()
	}
}

// monitor reports every client's link and decision every Period (the
// timeline of EXPLAIN ANALYZE).
func (r *run) monitor(ctx context.Context) {
	t := time.NewTicker(r.cfg.Period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		if now.Sub(r.start) > r.cfg.Duration {
			return
		}
		for i, s := range r.senders {
			d := r.decisionAt(i, r.epochOf(now))
			v := r.cfg.Variants[d.variant]
			r.cfg.Timeline(TimelineRow{AtS: now.Sub(r.start).Seconds(), Client: i,
				ShapedKbit:   r.shapers[i].BytesPerSecond(now) * 8 / 1000,
				EstimateKbit: s.Stats().AckBandwidthBps * 8 / 1000,
				Variant:      v.Name, Side: v.Side})
		}
	}
}

// pixelBytes is what a frame's pixels at side x side take on the wire.
func (r *run) pixelBytes(side int) float64 {
	if r.cfg.Uint8 {
		return float64(side * side)
	}
	return float64(side * side * 4)
}

// linkBps is client i's link bandwidth for decisions: the acks' harmonic
// mean over the last second (Jellyfish 6), or the latest ack's sample when
// that is lower, so a drop counts at once and a rise only once it held.
func (r *run) linkBps(i int) float64 {
	st := r.senders[i].Stats()
	bw := st.AckBandwidthBps
	if st.LastAckBps > 0 && st.LastAckBps < bw {
		bw = st.LastAckBps
	}
	return bw
}

// wireOverhead is what a frame costs on the wire beyond its pixels (the
// relay header and the Arrow IPC message), measured from the links once
// they carried something.
func (r *run) wireOverhead() float64 {
	var bytes, px float64
	for i, s := range r.senders {
		st := s.Stats()
		if st.Batches == 0 {
			continue
		}
		_ = i
		bytes += float64(st.Bytes)
		px += float64(st.Batches)
	}
	if px == 0 {
		return 600
	}
	// Frames were sent at several sizes: the overhead is taken at the
	// smallest, the conservative end for the larger ones.
	minPx := r.pixelBytes(r.cfg.Variants[0].Side)
	return math.Max(200, bytes/px-minPx)
}

func (r *run) problem() *control.JFProblem {
	over := r.wireOverhead()
	p := &control.JFProblem{Workers: r.cfg.Workers}
	for _, v := range r.cfg.Variants {
		p.Variants = append(p.Variants, control.JFVariant{Name: v.Name, Side: v.Side, Bytes: r.pixelBytes(v.Side) + over, Accuracy: v.Accuracy, BatchMs: v.BatchMs})
	}
	for i := range r.senders {
		bw := r.linkBps(i)
		if bw == 0 {
			bw = 1 // nothing measured yet: only the smallest frames
		}
		p.Clients = append(p.Clients, control.JFClient{Rate: r.cfg.Rate, SLOMs: float64(r.cfg.SLO) / float64(time.Millisecond),
			BandwidthBps: bw, MaxUtilization: r.cfg.MaxUtilization})
	}
	return p
}

func (r *run) result() *Result {
	res := &Result{Policy: r.cfg.Policy, Clients: r.cfg.Clients, SLOMs: float64(r.cfg.SLO) / float64(time.Millisecond)}
	var lats []float64
	var missed, correct, served int
	for i := range r.results {
		c := &r.results[i]
		// Frames sent but never answered (still on a link or in a queue
		// when the run ended) missed too.
		answered := len(c.Latencies) + c.Dropped
		if lost := c.Requests - answered; lost > 0 {
			c.Missed += lost
			c.Lost = lost
		}
		res.Requests += c.Requests
		missed += c.Missed
		correct += c.Correct
		served += c.Requests - c.Missed
		lats = append(lats, c.Latencies...)
		res.PerClient = append(res.PerClient, *c)
	}
	if res.Requests > 0 {
		res.SLOMissRate = round4(float64(missed) / float64(res.Requests))
	}
	if served > 0 {
		res.Accuracy = round4(100 * float64(correct) / float64(served))
	}
	sort.Float64s(lats)
	res.P50Ms, res.P99Ms = round4(Percentile(lats, 0.50)), round4(Percentile(lats, 0.99))
	return res
}

// Percentile of sorted xs (nearest rank), 0 when empty.
func Percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[max(0, min(i, len(xs)-1))]
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

func ms(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }

func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}
