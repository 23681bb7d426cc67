package ml

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
)

// SidesKey marks a tensor column of square images whose rows each travel
// at a side of their own, no larger than the shape's (planner/catalog's
// key of the same name): a list<float32> or list<uint8> column whose
// metadata keeps ShapeKey (the side the model takes) and lists the sides
// a row may have. The model call resizes each row to the shape.
const SidesKey = "tierflow.sides"

// WithSides is a copy of a that picks each batch's side among sides (a's own side
// first, then smaller ones, descending) from the link its output crosses,
// for a latency SLO of slo, to be met with probability attain (0:
// dataflow.DefaultAttainment), of which the model takes compute:
// Jellyfish's client-side data adaptation (7.3), which follows the link
// within a batch where a re-plan takes a second. The column becomes a
// variable-length list (VariableField). A stays as it is with one side.
func (a *Adapt) WithSides(sides []int, slo, compute time.Duration, attain float64) (*Adapt, error) {
	if len(sides) < 2 {
		return a, nil
	}
	if sides[0] != a.to {
		return nil, fmt.Errorf("%w: adapt: sides %v must start at the variant's %d", ErrSchema, sides, a.to)
	}
	for i := 1; i < len(sides); i++ {
		if sides[i] <= 0 || sides[i] >= sides[i-1] {
			return nil, fmt.Errorf("%w: adapt: sides %v are not positive and descending", ErrSchema, sides)
		}
	}
	if slo <= 0 {
		return nil, fmt.Errorf("%w: adapt: sides %v without a latency SLO", ErrSchema, sides)
	}
	b := Adapt{Base: a.Base, col: a.col, from: a.from, to: a.to, uint8: a.uint8, in: a.in, shape: a.shape}
	if attain <= 0 || attain >= 1 {
		attain = dataflow.DefaultAttainment
	}
	b.sides = newSideChooser(sides, int(product(a.shape[:len(a.shape)-2])), map[bool]int{true: 1, false: 4}[a.uint8], slo, compute)
	b.sides.attain = attain
	fs := append([]arrow.Field(nil), a.out.Fields()...)
	fs[a.col] = VariableField(a.field(a.in.Field(a.col).Name), sides)
	md := a.in.Metadata()
	b.out = arrow.NewSchema(fs, &md)
	return &b, nil
}

// VariableField is fixed, a tensor field (float32, or uint8-encoded), as
// the variable-length list that carries rows of any of sides (SidesKey).
func VariableField(fixed arrow.Field, sides []int) arrow.Field {
	lt := fixed.Type.(*arrow.FixedSizeListType)
	ss := make([]string, len(sides))
	for i, s := range sides {
		ss[i] = strconv.Itoa(s)
	}
	keys := append(slices.Clone(fixed.Metadata.Keys()), SidesKey)
	vals := append(slices.Clone(fixed.Metadata.Values()), strings.Join(ss, ","))
	return arrow.Field{Name: fixed.Name, Type: arrow.ListOf(lt.Elem()), Nullable: fixed.Nullable, Metadata: arrow.NewMetadata(keys, vals)}
}

// VariableShape is the per-row shape a variable-side field's rows are
// resized to (VariableField) and whether its values are uint8-encoded;
// ok is false for any other field.
func VariableShape(f arrow.Field) (shape []int64, uint8 bool, ok bool) {
	lt, isList := f.Type.(*arrow.ListType)
	if !isList || f.Metadata.FindKey(SidesKey) < 0 {
		return nil, false, false
	}
	switch lt.Elem().ID() {
	case arrow.FLOAT32:
	case arrow.UINT8:
		if enc, _ := f.Metadata.GetValue(EncodingKey); enc != "uint8" {
			return nil, false, false
		}
		uint8 = true
	default:
		return nil, false, false
	}
	v, has := f.Metadata.GetValue(ShapeKey)
	if !has {
		return nil, false, false
	}
	for _, p := range strings.Split(v, ",") {
		d, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil || d <= 0 {
			return nil, false, false
		}
		shape = append(shape, d)
	}
	if n := len(shape); n < 2 || shape[n-1] != shape[n-2] {
		return nil, false, false
	}
	return shape, uint8, true
}

// adaptVariable resizes (and encodes) every row of a tensor column to
// side, as a list column (rows of a null image are empty and null).
func (a *Adapt) adaptVariable(mem memory.Allocator, c arrow.Array, side int) (arrow.Array, error) {
	vals, size, err := TensorValues(c)
	if err != nil {
		return nil, err
	}
	rows := c.Len()
	px := a.from * a.from
	planes := size / px
	if planes*px != size {
		return nil, fmt.Errorf("%w: adapt: rows of %d values are not %dx%d planes", ErrSchema, size, a.from, a.from)
	}
	outSize := planes * side * side
	offs := memory.NewResizableBuffer(mem)
	defer offs.Release()
	offs.Resize((rows + 1) * arrow.Int32SizeBytes)
	off := arrow.Int32Traits.CastFromBytes(offs.Bytes())[:rows+1]
	buf, elem, f32, u8 := pixelBuffer(mem, rows*outSize, a.uint8)
	defer buf.Release()
	nulls, nNull := nullsOf(mem, c)
	if nulls != nil {
		defer nulls.Release()
	}
	at := 0
	for r := 0; r < rows; r++ {
		off[r] = int32(at)
		if nNull > 0 && c.IsNull(r) {
			continue
		}
		for p := 0; p < planes; p++ {
			src := vals[r*size+p*px : r*size+(p+1)*px]
			if a.uint8 {
				a.scratch = ResizeArea(a.scratch, src, a.from, side)
				EncodeUint8(u8[at:at], a.scratch)
			} else {
				ResizeArea(f32[at:at+side*side], src, a.from, side)
			}
			at += side * side
		}
	}
	off[rows] = int32(at)
	width := elem.(arrow.FixedWidthDataType).Bytes()
	a.sides.sent(side, int64(rows-nNull), int64(at*width))
	buf.Resize(at * width) // null rows took none of their room
	child := array.NewData(elem, at, []*memory.Buffer{nil, buf}, nil, 0, 0)
	defer child.Release()
	data := array.NewData(a.out.Field(a.col).Type, rows, []*memory.Buffer{nulls, offs}, []arrow.ArrayData{child}, nNull, 0)
	defer data.Release()
	return array.MakeFromData(data), nil
}

// Counters are the rows sent at each side ("side_28", ...;
// dataflow.Counting), for EXPLAIN ANALYZE; one side without sides.
func (a *Adapt) Counters() map[string]int64 {
	if a.sides == nil {
		return map[string]int64{"side_" + strconv.Itoa(a.to): a.rows.Load()}
	}
	out := make(map[string]int64, len(a.sides.sides)+1)
	for i, s := range a.sides.sides {
		out["side_"+strconv.Itoa(s)] = a.sides.rows[i].Load()
	}
	if n := a.sides.dropped.Load(); n > 0 {
		out[SideDropped] = n
	}
	return out
}

// SideDropped is the counter of rows an adaptation dropped before the link
// (among the side_<n> counters, so that it travels with them).
const SideDropped = "side_dropped"

var _ dataflow.Counting = (*Adapt)(nil)

// FormatSides writes side counters (Counters' keys) as "28:1200 20:310
// 14:95", largest side first, then "dropped:4" for rows dropped before
// the link; "" when there are none.
func FormatSides(counters map[string]int64) string {
	type kv struct {
		side int
		n    int64
	}
	var xs []kv
	for k, n := range counters {
		if s, ok := strings.CutPrefix(k, "side_"); ok {
			if side, err := strconv.Atoi(s); err == nil {
				xs = append(xs, kv{side, n})
			}
		}
	}
	slices.SortFunc(xs, func(a, b kv) int { return b.side - a.side })
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%d:%d", x.side, x.n)
	}
	if n := counters[SideDropped]; n > 0 {
		parts = append(parts, fmt.Sprintf("dropped:%d", n))
	}
	return strings.Join(parts, " ")
}

// sideChooser picks a batch's side from the link its adaptation feeds.
type sideChooser struct {
	sides        []int
	planes       int // values per pixel of a row (channels)
	width        int // bytes per value on the wire
	slo, compute time.Duration
	attain       float64        // the probability a batch must be in time with
	rows         []atomic.Int64 // rows sent at sides[i]
	dropped      atomic.Int64   // rows dropped before the link (pick's 0)
	// payload is the image bytes sent, so that the link's other bytes per
	// batch (framing, the other columns, progress) are its overhead.
	payload int64
	// recent are the batches of the last second, for the stream's rate.
	recent []sideArrival
	// lags are the latest measures of the chooser's own time from a
	// side's choice to the batch handed to the link (lagged), oldest
	// first: what pick keeps free of the budget, as it keeps the
	// receiver's residence.
	lags []time.Duration
	// dropAcks is the slowest link's ack count when the chooser last
	// dropped a batch (dropped: it has), so a drop is never read off the
	// same evidence twice (sidePlan.Stale).
	dropAcks uint64
	dropped1 bool
	// The stream's allowance: decided counts the batches decided, missed
	// those known to have missed (dropped, or acknowledged too late to
	// make their deadline), flights the batches sent whose fate is not
	// known yet, and base the link's data messages before the first.
	decided int64
	missed  float64
	flights []flight
	// lost marks the sides (as sides) a bet was lost on: each side's
	// learning bet is spent (learning).
	lost []bool
	// lastLate: the latest batch settled missed.
	lastLate bool
	sentN    uint64
	base     uint64
	based    bool
}

// flight is a batch sent and not yet acknowledged: its ingest stamp, the
// link's data messages up to and including it (0 until the next decision
// reads them), and what it loses, in batches, if the link falls under it,
// when it was sent beyond what the evidence holds (sidePlan.pick's spend).
type flight struct {
	ingest, ordinal int64
	through         uint64
	risk            float64
	side            int  // index in sides
	behind          bool // sent with the link's earlier batches unacknowledged
}

type sideArrival struct {
	at   int64 // Unix ns
	rows int64
}

func newSideChooser(sides []int, planes, width int, slo, compute time.Duration) *sideChooser {
	return &sideChooser{sides: slices.Clone(sides), planes: max(1, planes), width: width, slo: slo, compute: compute,
		attain: dataflow.DefaultAttainment, rows: make([]atomic.Int64, len(sides)), lost: make([]bool, len(sides))}
}

func (c *sideChooser) sent(side int, rows, payload int64) {
	c.payload += payload
	if i := slices.Index(c.sides, side); i >= 0 {
		c.rows[i].Add(rows)
	}
}

// lagged records how long the batch whose side was just chosen took from
// the choice to its hand-off to the link (resizing, encoding), the wait
// for a busy link left out: the bytes ahead of the batch price that.
func (c *sideChooser) lagged(d time.Duration) {
	if n := dataflow.EvidenceSamples(c.attain); len(c.lags) >= n {
		c.lags = append(c.lags[:0], c.lags[len(c.lags)-n+1:]...)
	}
	c.lags = append(c.lags, d)
}

// lagTail is the chooser's own lag with probability attain: the longest of
// its latest EvidenceSamples measures, as ResidenceTail reads the
// receiver's; 0 before any.
func (c *sideChooser) lagTail() time.Duration {
	var long time.Duration
	for _, d := range c.lags {
		long = max(long, d)
	}
	return long
}

// defaultOverhead is a batch's bytes beyond its images before the link
// has carried any (a relay header and an Arrow IPC message of one row).
const defaultOverhead = 600

// choose is the side of the next batch of rows, from the link's state
// as its output's sender reports it (dataflow.Context.OutputLinks).
func (c *sideChooser) choose(ctx *dataflow.Context, rows int64) int {
	var states []dataflow.LinkState
	for _, l := range ctx.OutputLinks(0) {
		states = append(states, l.LinkState())
	}
	return c.decide(time.Now().UnixNano(), ctx.Ingest(), states, rows)
}

// decide is choose's rule at now (Unix ns) for a batch of rows stamped
// ingest, whose output crosses links.
func (c *sideChooser) decide(now, ingest int64, links []dataflow.LinkState, rows int64) int {
	at := ingest
	if at <= 0 || at > now {
		at = now
	}
	c.recent = append(c.recent, sideArrival{at: at, rows: rows})
	i := 0
	for i < len(c.recent)-1 && at-c.recent[i].at > int64(time.Second) {
		i++
	}
	c.recent = c.recent[i:]
	if len(links) == 0 {
		return c.sides[0] // the model runs here: nothing to save
	}
	// The slowest link (one, unless the call is spread over workers).
	var st dataflow.LinkState
	var bytes, batches uint64
	for k, s := range links {
		bytes += s.Bytes
		batches += s.Batches
		if k == 0 || linkBps(s) < linkBps(st) {
			st = s
		}
	}
	p := sidePlan{State: st, Rows: rows, Overhead: defaultOverhead, SLO: c.slo, Compute: c.compute, Attain: c.attain, Lag: c.lagTail()}
	if batches > 0 {
		p.Overhead = math.Max(64, (float64(bytes)-float64(c.payload))/float64(batches))
	}
	if ingest > 0 && ingest < now {
		p.Age = time.Duration(now - ingest)
	}
	if !st.OldestSent.IsZero() && st.OldestSent.UnixNano() < now {
		p.Crossing = time.Duration(now - st.OldestSent.UnixNano())
	}
	if n := len(c.recent); n > 1 {
		span := float64(c.recent[n-1].at-c.recent[0].at) / 1e9
		if span > 0 {
			var r int64
			for _, a := range c.recent[1:] {
				r += a.rows
			}
			p.BatchesPerSec, p.RowsPerSec = float64(n-1)/span, float64(r)/span
		}
	}
	p.Stale = c.dropped1 && st.Acks == c.dropAcks
	c.decided++
	if len(links) == 1 {
		p.Allowance = c.allowance(st, after(p.Compute, st, c.attain))
		p.Learning = c.learning()
		p.Debt = c.missed - (1-c.attain)*float64(c.decided)
	}
	side, spend := p.pick(c.sides, c.planes, c.width)
	if side == 0 {
		c.dropped1, c.dropAcks = true, st.Acks
		c.missed++
		return 0
	}
	if len(links) == 1 {
		if !c.based {
			c.base, c.based = st.Batches, true
		}
		c.sentN++
		c.flights = append(c.flights, flight{ingest: at, ordinal: int64(c.base + c.sentN), risk: spend, side: slices.Index(c.sides, side), behind: st.Batches > st.Acks})
	}
	return side
}

// allowance is what the stream may still spend, in expected missed
// batches, on a side its link's evidence does not yet hold: the query asks
// that 1-p of its batches be in time, not each batch on its own, so the
// misses it has not had are the room to send larger before the evidence is
// in (a new link's first p/(1-p) samples). It is (1-p) of the batches
// decided, less those known to have missed and the risk of those still on
// the link that were sent on it. Over a prefix shorter than 1/(1-p)
// batches it is one batch per side above the smallest: the bets the stream
// may lose while it learns the link, one on each side it has not yet seen
// the link carry (a stream that asks for a latency bound is long-lived,
// and pays them back at 1-p a batch). With one batch, the first bet lost
// on a flapping link left nothing for the middle side, and the stream sent
// the smallest until the evidence held the middle, 42 batches later.
// The batches acknowledged since the last decision are settled first, each
// missed when its ack came later than its deadline less what the receiver
// needs after the link (after): the ack's time is that of the first ack
// event the link kept that covered it (dataflow.LinkState.AckedAt), at or
// after the batch's own, so a batch is never counted in time that was
// late.
func (c *sideChooser) allowance(st dataflow.LinkState, after time.Duration) float64 {
	if c.based {
		for i := range c.flights {
			if c.flights[i].through == 0 {
				c.flights[i].through = max(uint64(c.flights[i].ordinal), st.Batches)
			}
		}
	}
	k := 0
	for ; k < len(c.flights) && c.flights[k].through > 0 && c.flights[k].through <= st.Acks; k++ {
		f := c.flights[k]
		late := false
		if at := st.AckedAt(f.through); at.IsZero() || time.Duration(at.UnixNano()-f.ingest)+after > c.slo {
			c.missed++
			late = true
			// A bet sent behind a batch still on the link that then
			// missed waited on that one: the queue lost it, not its side.
			if f.risk > 0 && f.side >= 0 && !(f.behind && c.lastLate) {
				c.lost[f.side] = true
			}
		}
		c.lastLate = late
	}
	c.flights = append(c.flights[:0], c.flights[k:]...)
	spent := c.missed
	for _, f := range c.flights {
		if f.risk > 0 {
			spent += max(1, f.risk)
		}
	}
	return (1-c.attain)*float64(c.decided) - spent
}

// learning is each side's learning bet (as sides): one batch, less the
// risk of its bets on the link, until a bet on it is lost. A stream that
// asks for a latency bound is long-lived and pays its misses back at 1-p a
// batch, but it cannot learn what the link carries without sending it, so
// it may lose one bet on each side before the evidence holds it. Pooled
// instead (len(sides)-1 batches for the first 1/(1-p)), the bets lost on
// the largest side of a flapping link, a frame and the drop behind it,
// spent the middle's too, and the stream sent the smallest until the
// evidence held the middle, 45 batches later (flapping-619, queued sender:
// 0.09 points under static-middle).
func (c *sideChooser) learning() []float64 {
	out := make([]float64, len(c.sides))
	for i := range out {
		if !c.lost[i] {
			out[i] = 1
		}
	}
	for _, f := range c.flights {
		if f.risk > 0 && f.side >= 0 {
			out[f.side] -= max(1, f.risk)
		}
	}
	return out
}

// after is what a batch needs after the link: the model's profiled
// compute, or the receiver's measured residence at p where longer.
func after(compute time.Duration, st dataflow.LinkState, p float64) time.Duration {
	return max(compute, st.ResidenceTail(p))
}

// linkBps is the bandwidth a batch's side is chosen by
// (dataflow.LinkBandwidth.BatchBps).
func linkBps(s dataflow.LinkState) float64 { return s.Bandwidth().BatchBps() }

// sidePlan is what a batch's side is chosen from.
type sidePlan struct {
	State dataflow.LinkState
	Rows  int64
	// Overhead is a batch's bytes on the wire beyond its images.
	Overhead float64
	// Age is how long the batch has been in the query already (queued
	// behind the link, say).
	Age          time.Duration
	SLO, Compute time.Duration
	// Lag is the sender's own time from the choice to the link, at the
	// attainment (sideChooser.lagTail).
	Lag time.Duration
	// Attain is the probability the batch must be in time with.
	Attain                    float64
	BatchesPerSec, RowsPerSec float64 // the stream's; 0: not known yet
	// Stale: the link has acknowledged nothing since the stream last
	// dropped a batch, so its numbers are the ones that drop read.
	Stale bool
	// Crossing is how long the oldest unacknowledged message has been on
	// the link (0: none).
	Crossing time.Duration
	// Allowance is what the stream may still spend, in expected missed
	// batches, on a side the link's evidence does not hold yet
	// (sideChooser.allowance); 0: nothing.
	Allowance float64
	// Learning is each side's own learning bet (sideChooser.learning),
	// as sides; nil: none.
	Learning []float64
	// Debt is how many batches the stream has missed beyond 1-p of those
	// decided (0 or less: none).
	Debt float64
}

// pick is the largest of sides (descending) whose batch the link carries
// in time with probability Attain, read from how the link's measured
// samples move (dataflow.LinkBandwidth.Holds): the least bandwidth at which
// the batch, behind what is on the wire ahead of it and with half a round
// trip, what the receiver needs after the link (its measured residence,
// else the model's profiled compute) and the sender's own lag, reaches its result
// within the SLO, and the next batch, behind it, still can at the smallest
// side (nextFits), must hold for the next message with that probability,
// given what the link gives now. A link whose good spells end in fades
// keeps its large frames out of them; one that drifts steps up as soon as
// it is back; a fall counts at the first message that goes without its ack
// longer than the link allows (OverdueBps), before any slow ack. The first
// side before the link has acknowledged anything; the smallest when none
// fits. It is 0, drop the batch, when it waited so long (behind a link
// that fell while a large frame crossed it) that even the smallest side,
// alone on the link at its best rate that the evidence allows, would
// reach the model after its deadline: Jellyfish's lazy drop, before the
// link rather than after it. Sent, the batch misses all the same and holds
// up the frames behind it, which then miss too. After a drop, the next one
// needs a new ack (Stale), or a batch already past its deadline.
//
// The drop leaves the link's tail out on purpose: with it it fed on itself
// (a dropped batch brings no ack, so an estimate left low by a slow step
// dropped every batch after the link came back: 59% of a trace's frames,
// where sending them missed 5%), and so are the bytes ahead (see below).
//
// With the evidence short of holding any side above the smallest, the
// stream's Allowance buys a bet (sideChooser.allowance): the largest side
// the link has never fallen under, else one step up.
func (p sidePlan) pick(sides []int, planes, width int) (side int, spend float64) {
	view := p.State.Bandwidth()
	smallest := sides[len(sides)-1]
	if p.State.Acks == 0 || view.BatchBps() <= 0 {
		// Before the first ack the link is unknown: the first batch is the
		// allowance's bet on the largest side, as if the link carried it.
		if p.State.Acks == 0 && p.allowance(0) >= 1 {
			return sides[0], 1
		}
		return smallest, 0
	}
	// Every term of the budget is measured: the batch's age, the
	// sender's lag to the link, half the round trip, the transfer at the
	// link's evidence and the receiver's tail. (It was a fixed margin of
	// a tenth of the SLO: a constant beside measures that already carry
	// their variance.)
	margin := p.Lag
	// Half a round trip: the base one where the rate excludes it, else
	// the messages' (their transfer counted twice, the safe side).
	rtt := p.State.SRTT
	if p.State.TransferBps > 0 && p.State.BaseRTT > 0 {
		rtt = p.State.BaseRTT
	}
	// What the batch needs after the link: the model's profiled compute,
	// or, once the receiver has measured it, the time its worker keeps a
	// batch until the result with the same probability (queueing, batching
	// and compute on a machine that runs other work: a loaded worker takes
	// several times its profile).
	after := after(p.Compute, p.State, p.Attain)
	budget := (p.SLO - after - margin - p.Age - rtt/2).Seconds()
	rowBytes := func(s int) float64 { return float64(planes * s * s * width) }
	rare, rareOK := view.FallUnderWay(p.Attain)
	risk := func(s int) (dataflow.LinkRisk, bool) {
		own := float64(p.Rows)*rowBytes(s) + p.Overhead
		ahead := float64(p.State.UnackedBytes) + own
		need, ok := leastBps(func(bw float64) bool {
			ahead := p.left(bw) + own
			return ahead/bw <= budget && (p.BatchesPerSec <= 0 || p.nextFits(ahead, bw, rowBytes(smallest), budget+p.Age.Seconds()))
		})
		if !ok {
			return dataflow.LinkRisk{}, false
		}
		// A fall under way that the link makes rarely (FallUnderWay: at
		// most 1-p of its transitions fell that far) is one the Risk at p
		// never priced: read from the current sample's side, a side whose
		// need is under the overdue bound held from 54 transitions, and a
		// second fit-28 frame went behind the overdue one and missed with
		// it (steps-2411, queued sender: 2.01% missed, 1.90% with this).
		// While it lasts a side above the smallest holds only if no more
		// than 1-p of the falls that deep ended under its need.
		if rareOK && s != smallest && rare(need) > 1-p.Attain {
			return dataflow.LinkRisk{}, false
		}
		return view.Risk(need, func(fall []float64) float64 {
			return p.fallCost(ahead, fall, view.Current(), rowBytes(smallest), budget)
		}), true
	}
	// The largest side the evidence holds; failing that, the side just
	// above it (or above the smallest) if the link carries it now and the
	// stream's allowance covers what it loses if the link falls under it
	// (LinkRisk.Loss: a large frame that meets a fall misses and holds up
	// the frames behind it). Covering only its expected cost, rounded up
	// to one batch, bought the side on an allowance that a fall then
	// overdrew: a flapping link whose falls each cost the large frame and
	// the drop behind it ended at 2.0-2.2% missed (bench slo --simulate:
	// 108 of 126 traces passed on the queued sender, 113 so). The bet is
	// on the largest side the link carries now that it has never fallen
	// under (no sample under its need: every side it carries then has the
	// same estimate, (0+1)/(n+1), and the largest is worth the most); once
	// the link has fallen under a side, only the step just above what
	// holds. One step only, from the start, held a walk that carries the
	// largest side throughout at the middle for the 49 batches the
	// evidence takes, 0.11 points under static-largest (bench slo
	// --simulate, blocking sender: 115 of 126 traces, 124 with the jump;
	// queued 114, 116).
	rs := make([]dataflow.LinkRisk, len(sides))
	oks := make([]bool, len(sides))
	h := len(sides) - 1 // the smallest, where nothing holds
	hold := p.holdAttain()
	for i, s := range sides {
		rs[i], oks[i] = risk(s)
		if oks[i] && rs[i].Holds(hold) {
			h = i
			break
		}
	}
	for i := 0; i < h; i++ {
		if oks[i] && rs[i].Above && !rs[i].Falling && rs[i].Loss <= p.allowance(i) && (i == h-1 || !rs[i].Fell) {
			return sides[i], rs[i].Loss
		}
	}
	if h < len(sides)-1 || (oks[h] && rs[h].Holds(hold)) {
		return sides[h], 0
	}
	// The drop must be sure the batch misses: the profiled compute, the
	// least the receiver can take, not its measured tail. And it must not
	// read the link off the evidence an earlier drop read: a dropped batch
	// brings no ack, so numbers left low (a slow start, a stale round trip)
	// would drop every batch after it for good (one client of four dropped
	// 486 of 496 frames on a 1,451 kbit/s link its first two frames had
	// measured at 163). Then the batch goes at the smallest side and its
	// ack is the new evidence, unless it has waited past its deadline
	// already, which needs no link to tell. A message overdue on the link
	// is evidence of now, not of an earlier drop: the best rate is no more
	// than it allows.
	if p.Rows == 0 {
		return smallest, 0
	}
	if p.Age+p.Compute >= p.SLO {
		return 0, 0
	}
	// The link's rate now is its latest sample's (the better of it with the
	// base round trip in and out), as Current reads it: the means over the
	// window keep a spell that has ended (with them, a link fallen to about
	// the smallest side's stream read at its old rate and let a queue of
	// misses build behind each large frame: bench slo --simulate
	// --sim-sender queued 60 of 86 traces, 72 with the latest; the
	// blocking sender's 77 either way). An earlier drop's stale numbers
	// are Stale's to guard.
	//
	// No sample count is asked of the link first: a drop reads the batch's
	// own fate at the rate the link gives now, not a tail, and Stale keeps
	// a slow start from dropping twice. (Asking EvidenceSamples of it let
	// the frames behind a side bought with the allowance, in the first
	// seconds of a link that fell under it, all go and all miss by a few
	// ms: flapping-919, 2.38% missed where static-smallest misses none.)
	best := max(p.State.LastBps, p.State.LastTransferBps)
	if p.State.OverdueBps > 0 {
		best = min(best, p.State.OverdueBps)
	}
	// The batch with its framing (a frame of the smallest side is about
	// 40% framing: left out, the drop let through batches that then
	// missed, and each held up the ones behind), behind what the link, at
	// that best rate, cannot have carried of the bytes on the wire since
	// the oldest got it (left). Not all of them, as if none had crossed:
	// on a sender that blocks until the link has carried a batch (the
	// engine's shaped one) the batch just published has crossed, and
	// counting it dropped 204 of 1,800 frames on flapping-304 (5.7%
	// missed, against 0.25%); nor none: on one that queues on the wire (a
	// real link's), leaving the queue out let every frame behind a large
	// one through to miss (bench slo --simulate --sim-sender queued: 48
	// of 66 traces with it, 37 without; the blocking sender's 61 of 66
	// either way).
	ahead := p.left(best) // best is no more than the overdue bound already
	alone := (ahead + float64(p.Rows)*rowBytes(smallest) + p.Overhead) / best
	if !p.Stale && (p.Age+p.Compute+rtt/2).Seconds()+alone > p.SLO.Seconds() {
		return 0, 0
	}
	return smallest, 0
}

// holdAttain is the probability a side must hold with: Attain, or more
// while the stream is in debt (Debt), so that its next EvidenceSamples
// batches pay the debt back; with a batch of debt, only the smallest. The
// query asks 1-p of the stream's batches in time, not of each decision:
// held at p throughout, a link that drifts under a side's need (a walk,
// whose samples show no fall until the drift crosses it) kept the queue at
// the SLO's edge and each crossing missed, 2.1-2.3% of the stream where
// static-smallest misses none (bench slo --simulate, queued sender:
// walk-608, held-out walk-1003, 1208, 1408).
func (p sidePlan) holdAttain() float64 {
	if p.Debt <= 0 {
		return p.Attain
	}
	r := (1 - p.Attain) - p.Debt/float64(dataflow.EvidenceSamples(p.Attain))
	if r <= 0 {
		return 1
	}
	return 1 - r
}

// allowance is what a bet on sides[i] may spend: the stream's Allowance,
// or the side's learning bet where that is more.
func (p sidePlan) allowance(i int) float64 {
	if i < len(p.Learning) {
		return max(p.Allowance, p.Learning[i])
	}
	return p.Allowance
}

// left is what is still ahead of a batch of the bytes on the wire, were the
// link at bw: what it carried of them since the oldest got it (Crossing),
// at bw and at most at the rate the oldest's missing ack allows (had it
// carried more, the ack would be back). A fall under way shows in that
// bound, which Current reads as the link's rate now; left once also
// counted none of the bytes crossed when the bound was under the latest
// sample, which read a batch the engine's shaped sender had carried (it
// publishes once carried) as still ahead, and sent the next one at the
// smallest side where the one above fitted: without it bench slo
// --simulate passes 78 of 86 traces on that sender (77 with) and 73 on a
// sender that queues on the wire (72).
func (p sidePlan) left(bw float64) float64 {
	unacked := float64(p.State.UnackedBytes)
	if o := p.State.OverdueBps; o > 0 {
		bw = min(bw, o)
	}
	return max(0, unacked-bw*p.Crossing.Seconds())
}

// leastBps is the least bandwidth (bytes per second) at which fits holds,
// for a fits that holds from some bandwidth on; false where it holds at
// none (a batch already out of time).
func leastBps(fits func(bw float64) bool) (float64, bool) {
	lo, hi := 1.0, 1e12
	if !fits(hi) {
		return 0, false
	}
	if fits(lo) {
		return lo, true
	}
	for hi/lo > 1.001 {
		mid := math.Sqrt(lo * hi)
		if fits(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true
}

// fallCost is what a batch of ahead bytes in all (the link's unacked
// bytes, its own and its framing) costs, in batches of its rows missed,
// when the link falls under what it needs as it once fell (fall: the
// samples it gave, one a message, until it was back over the need) and is
// back at cur after: the batch itself if it misses its budget, and each
// batch behind it, at the smallest side (smallestRow bytes a row), that
// arrives while the link is still busy and then misses a fresh batch's
// budget, less what the same batches miss with the link at cur throughout
// (a stream the link carries no better now misses those anyway). A large
// frame that meets a fade holds up the frames behind it for as long as the
// fade lasts, a small one less: the probability of the fall alone prices
// both as one miss. Only the batches that arrive before the batch would be
// done, plus a fresh budget, count: a later one that misses waits behind
// the stream's own queue, not this batch.
func (p sidePlan) fallCost(ahead float64, fall []float64, cur, smallestRow, budget float64) float64 {
	if len(fall) == 0 || fall[0] <= 0 {
		return 1
	}
	return max(0, p.missed(ahead, fall, cur, smallestRow, budget)-p.missed(ahead, nil, cur, smallestRow, budget))
}

// missed is fallCost's count for one course of the link: fall's samples
// one a message, then cur.
func (p sidePlan) missed(ahead float64, fall []float64, cur, smallestRow, budget float64) float64 {
	at := func(j int) float64 {
		if j < len(fall) {
			return fall[j]
		}
		return cur
	}
	if at(0) <= 0 {
		return 0
	}
	done := ahead / at(0)
	cost := 0.0
	if done > budget {
		cost = 1
	}
	if p.BatchesPerSec <= 0 || p.Rows <= 0 {
		return cost
	}
	gap := 1 / p.BatchesPerSec
	rows := p.RowsPerSec / p.BatchesPerSec
	bytes := rows*smallestRow + p.Overhead
	fresh := budget + p.Age.Seconds()
	last := (done + fresh) / gap
	t := done
	for j := 1; float64(j) <= last && t > float64(j)*gap; j++ {
		bw := at(j)
		if bw <= 0 {
			break
		}
		t += bytes / bw
		if t-float64(j)*gap > fresh {
			cost += rows / float64(p.Rows)
		}
	}
	return cost
}

// nextFits reports whether the stream's next batch, at the smallest side,
// still reaches the model in time (budget, as a fresh batch has it) behind
// ahead bytes sent now, with the link at bw draining them meanwhile. A side
// that leaves the next batch no side in time is never taken; any other is,
// so the queue may grow for a while where the slack of the SLO absorbs it
// (the next batches then go smaller until it drains) rather than the
// stream at a side having to fit the link's tail on its own, which held a
// link stepping around a side's rate at the side below it all the time.
// When even the smallest side's stream is more than the link carries,
// only the smallest side keeps the next batch in time, so that is sent.
func (p sidePlan) nextFits(ahead, bw, smallestRow, budget float64) bool {
	gap := 1 / p.BatchesPerSec
	rows := p.RowsPerSec / p.BatchesPerSec
	left := max(0, ahead-bw*gap)
	return (left+rows*smallestRow+p.Overhead)/bw <= budget
}

// variableValues decodes a variable-side column's rows to float32 at
// shape's side, resizing each smaller row up by area (ResizeArea: on the
// Fashion-MNIST test frames fit-28 is 0.3 points more accurate on 20x20
// frames so resized than bilinearly, 1.9 on 14x14; TestVariableSidesOnTheZoo
// in runtime/inference prints the table): one slice
// of rows*product(shape) values. Rows whose length is no square of planes
// at most the side are zero and listed in bad, as null rows are. native,
// when set, is asked for each good row of a smaller side where its values
// go at that side, unresized (a variant that takes the side: the Model's
// side variants); the row is then zero in vals. A nil answer resizes.
func variableValues(col arrow.Array, shape []int64, dst []float32, native func(r, side int) []float32) (vals []float32, bad []int, err error) {
	l, ok := col.(*array.List)
	if !ok {
		return nil, nil, fmt.Errorf("%w: %s is not a variable-side tensor column", ErrSchema, col.DataType())
	}
	n := len(shape)
	to := int(shape[n-1])
	planes := int(product(shape[:n-2]))
	size := planes * to * to
	rows := l.Len()
	if cap(dst) < rows*size {
		dst = make([]float32, rows*size)
	}
	vals = dst[:rows*size]
	var f32 []float32
	var u8 []byte
	switch v := l.ListValues().(type) {
	case *array.Float32:
		f32 = v.Float32Values()
	case *array.Uint8:
		u8 = v.Uint8Values()
	default:
		return nil, nil, fmt.Errorf("%w: variable-side tensor elements are %s, want float32 or uint8", ErrSchema, l.ListValues().DataType())
	}
	var plane []float32
	for r := 0; r < rows; r++ {
		out := vals[r*size : (r+1)*size]
		if l.IsNull(r) {
			clear(out)
			continue
		}
		s64, e64 := l.ValueOffsets(r) // Offsets() ignores a slice's offset
		start, end := int(s64), int(e64)
		side := int(math.Round(math.Sqrt(float64(end-start) / float64(planes))))
		if side <= 0 || side > to || planes*side*side != end-start || end > max(len(f32), len(u8)) {
			clear(out)
			bad = append(bad, r)
			continue
		}
		if native != nil && side < to {
			if d := native(r, side); d != nil {
				clear(out)
				ss := side * side
				for p := 0; p < planes; p++ {
					lo, hi := start+p*ss, start+(p+1)*ss
					if u8 != nil {
						DecodeUint8(d[p*ss:p*ss], u8[lo:hi])
					} else {
						copy(d[p*ss:(p+1)*ss], f32[lo:hi])
					}
				}
				continue
			}
		}
		for p := 0; p < planes; p++ {
			lo, hi := start+p*side*side, start+(p+1)*side*side
			if u8 != nil {
				plane = DecodeUint8(plane[:0], u8[lo:hi])
			} else {
				plane = append(plane[:0], f32[lo:hi]...)
			}
			ResizeArea(out[p*to*to:(p+1)*to*to], plane, side, to)
		}
	}
	return vals, bad, nil
}
