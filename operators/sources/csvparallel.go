package sources

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
)

// csvParallel reads a CSV file on every core: one goroutine cuts the file
// into chunks of whole lines, workers parse chunks with csvTyped, and the
// reader hands their records out in file order (a stream's watermark and a
// bad row's line number mean the same as in a sequential read).
//
// Lines are records only while no quote has been seen: a quoted field may
// hold a line break. So a chunk with a quote ends the parallel read, and
// the scanner goes on from that chunk's first byte (see CSVReader.Next).
type csvParallel struct {
	// maxLine bounds a line's bytes (CSVReader.maxLine; 0: none).
	maxLine int
	f       *os.File
	plan    *csvTyped
	mem     memory.Allocator
	batch   int
	size    int // bytes per chunk

	queue chan *csvChunk // in file order, to the reader
	work  chan *csvChunk // to the workers
	quit  chan struct{}
	wg    sync.WaitGroup
	// cpu runs each chunk's parse as a step of the reading query
	// (dataflow.Helper): the parse runs on every core, outside the
	// source's steps.
	cpu *dataflow.Helper
	// ahead bounds the chunks in flight by the bytes of their records and
	// text, within the query's read-ahead (readahead.go); last is the
	// chunk whose records the reader is handing out, released when it
	// takes the next.
	ahead *dataflow.ReadAheadGate
	last  *csvChunk
	// spare holds the buffers of chunks the reader is done with, for the
	// splitter's next chunks: a fresh buffer is zeroed by make and faults
	// its pages in (a fifth of a cross join's worker CPU, reading 1 MiB
	// chunks), where a spare one is only read into. The two take turns
	// on the cores, so the reader may free all the chunks the queue held
	// before the splitter runs again: the spares are as many as the queue
	// and the reader's chunk, so that no buffer is dropped and the
	// buffers alive are never more than were in flight at once. A spare
	// that does not fit the next chunk is dropped. made counts the
	// buffers made fresh;
	// longest is the longest carry so far (the part line at a chunk's end).
	spare   chan []byte
	made    int
	longest int
	// text charges the chunk buffers to the query (the bytes of every
	// buffer made and not yet dropped: in flight or spare); nil when the
	// read's allocator charges no budget. They were about as much as the
	// records parsed from them, and uncharged: a UNION ALL of 200 scans of
	// one file took a worker to 1.7 GB under a 64 MiB query limit.
	text      dataflow.Charger
	textBytes atomic.Int64
}

type csvChunk struct {
	data   []byte
	off    int64 // file offset of data
	line   int   // line number of its first line
	recs   []arrow.Record
	status chunkStatus
	err    error
	done   chan struct{}
	// charged is what the chunk holds against the read-ahead allowance.
	charged int64
}

// csvChunkBytes is the size of a chunk: large enough that a worker's cost
// per chunk (builders, a record) is amortised, small enough that every core
// gets chunks of a 10 MB file.
const csvChunkBytes = 1 << 20

// startCSVParallel reads f from off on workers goroutines (0: one per
// core). What it holds ahead is bounded by its part of its query's
// read-ahead (dataflow.ReadAheadGate, shared with the query's other
// readers), not by workers, and so are its chunks: at most size, less
// under a small share (chunkSize).
func startCSVParallel(f *os.File, plan *csvTyped, mem memory.Allocator, batch int, off int64, line int, size int, workers int, cpu *dataflow.Helper, maxLine int) *csvParallel {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ahead := dataflow.NewReadAheadGate(mem)
	queue := make(chan *csvChunk, 2*workers+2)
	p := &csvParallel{maxLine: maxLine, f: f, plan: plan, mem: mem, batch: batch, size: size, cpu: cpu, ahead: ahead,
		queue: queue, work: make(chan *csvChunk, workers), quit: make(chan struct{}),
		spare: make(chan []byte, cap(queue)+1), text: dataflow.ChargerOf(mem)}
	p.wg.Add(1 + workers)
	go p.split(off, line)
	for range workers {
		go p.parse()
	}
	return p
}

// split cuts the file from off into chunks that end at a line break (or at
// the end of the file).
func (p *csvParallel) split(off int64, line int) {
	defer p.wg.Done()
	defer close(p.work)
	defer close(p.queue)
	var carry []byte
	size := p.chunkSize()
	// A chunk's buffer is no larger than what is left of the file (and one
	// byte, so that the read that takes the rest also sees its end): a
	// small file read by each of 500 UNION ALL branches took a 1 MiB
	// buffer apiece, 7 s of zeroing memory.
	end := int64(-1)
	if st, err := p.f.Stat(); err == nil && st.Mode().IsRegular() {
		end = st.Size()
	}
	fit := func(size int) int {
		if end >= 0 {
			return int(min(int64(size), max(end-off-int64(len(carry)), 0)+1))
		}
		return size
	}
	for {
		// Making a chunk (a fresh buffer zeroed, the file read into it,
		// its lines counted below) is the query's work too: a step of
		// its query's turn, as the parse is. Ungated it was a quarter of
		// a worker's CPU under a query reading a large file, taken from
		// the others on that worker whatever their share.
		var buf []byte
		var n int
		var err, refused error
		// The chunk's records are charged to the read-ahead before its
		// buffer is made: under a small budget the splitter waits here
		// for the reader to take what is ahead.
		charged, ok := p.ahead.Acquire(int64(len(carry) + fit(size)))
		if !ok {
			return
		}
		p.cpu.Do(func() {
			if buf, refused = p.buffer(len(carry) + fit(size)); refused != nil {
				return
			}
			copy(buf, carry)
			n, err = p.f.ReadAt(buf[len(carry):], off+int64(len(carry)))
		})
		if refused != nil {
			ch := &csvChunk{off: off, line: line, status: chunkFailed, err: refused, done: make(chan struct{}), charged: charged}
			close(ch.done)
			p.send(ch, false)
			return
		}
		buf = buf[:len(carry)+n]
		eof := err == io.EOF
		if end >= 0 && off+int64(len(buf)) > end {
			end = -1 // the file grew: chunks of the full size again
		}
		if err != nil && !eof {
			ch := &csvChunk{off: off, line: line, status: chunkFailed, err: err, done: make(chan struct{}), charged: charged}
			close(ch.done)
			p.send(ch, false)
			return
		}
		if len(buf) == 0 {
			p.ahead.Release(&charged)
			return
		}
		cut := len(buf)
		if !eof {
			i := bytes.LastIndexByte(buf, '\n')
			if i < 0 { // a line longer than the chunk: read more of it
				p.ahead.Release(&charged)
				if p.maxLine > 0 && len(buf) >= p.maxLine {
					ch := &csvChunk{off: off, line: line, status: chunkFailed, done: make(chan struct{}),
						err: lineTooLong(line, p.maxLine)}
					close(ch.done)
					p.send(ch, false)
					return
				}
				carry, size = buf, size*2
				if p.maxLine > 0 {
					// Read no further than the bound: the next pass fails
					// there, holding the bound, not twice it.
					size = max(1, min(size, p.maxLine-len(buf)))
				}
				continue
			}
			cut = i + 1
		}
		ch := &csvChunk{data: buf[:cut], off: off, line: line, done: make(chan struct{}), charged: charged}
		p.cpu.Do(func() { line += bytes.Count(ch.data, []byte{'\n'}) })
		off += int64(cut)
		carry, size = buf[cut:], p.chunkSize()
		p.longest = max(p.longest, len(carry))
		if !p.send(ch, true) || eof {
			return
		}
	}
}

// chunkSize is the size of the next chunk: the reader's (csvChunkBytes),
// or less where its share of the query's read-ahead would hold fewer than
// aheadChunks of them: the share shrinks as more of the query's readers
// read at once (a UNION ALL's scans), and grows back as they end.
func (p *csvParallel) chunkSize() int {
	if share := p.ahead.Share(); share > 0 {
		return min(p.size, aheadChunkBytes(share))
	}
	return p.size
}

// buffer is a chunk buffer of n bytes: a spare one when it is large
// enough, else a fresh one, charged to the query first (refused past its
// limit). A spare's old bytes are left: the read
// overwrites what the chunk keeps (buf[:len(carry)+n] above). A chunk
// is its carry and then the read, so its length varies by a part line:
// a fresh buffer has room for the longest carry seen besides, or most
// spares would be a few bytes short of the next chunk.
func (p *csvParallel) buffer(n int) ([]byte, error) {
	select {
	case b := <-p.spare:
		if cap(b) >= n {
			return b[:n], nil
		}
		p.drop(b)
	default:
	}
	size := n + p.longest
	if p.text != nil {
		if err := p.text.Charge(int64(size)); err != nil {
			return nil, fmt.Errorf("reading %s of the file's text ahead: %w", dataflow.Bytes(int64(size)), err)
		}
		p.textBytes.Add(int64(size))
	}
	p.made++
	return make([]byte, n, size), nil
}

// drop gives back the charge of a chunk buffer no one will use again.
func (p *csvParallel) drop(b []byte) {
	if p.text != nil {
		p.textBytes.Add(-int64(cap(b)))
		p.text.Uncharge(int64(cap(b)))
	}
}

// dropAll gives back what every buffer was charged, and the reader's part
// of the read-ahead, once nothing reads or makes chunks: the splitter has
// ended and the reader took the last.
func (p *csvParallel) dropAll() {
	p.ahead.Close()
	for {
		select {
		case <-p.spare:
			continue
		default:
		}
		break
	}
	if n := p.textBytes.Swap(0); n != 0 && p.text != nil {
		p.text.Uncharge(n)
	}
}

// recycle offers ch's buffer to the splitter once nothing reads it: the
// records the parse made hold copies (Arrow's builders copy), and the
// reader is past the chunk's rows. The carry the splitter took from it was
// copied into the next chunk's buffer before that chunk was queued, so
// before the reader could take it and free this one.
func (p *csvParallel) recycle(ch *csvChunk) {
	if ch.data == nil {
		return
	}
	b := ch.data[:cap(ch.data)]
	ch.data = nil
	// Under a budget a spare is kept while the text the reader holds, in
	// flight and spare, is within half its share of the query's
	// read-ahead (records take about the bytes of their text: the other
	// half): spares are charged, but not ahead of anyone, and one per
	// chunk a larger share once held put the query's readers past its
	// read-ahead together.
	if share := p.ahead.Share(); share > 0 && 2*p.textBytes.Load() > share {
		p.drop(b)
		return
	}
	select {
	case p.spare <- b:
	default:
		p.drop(b)
	}
}

// send queues ch for the reader and, when parse is set, for a worker;
// false once the reader has closed.
func (p *csvParallel) send(ch *csvChunk, parse bool) bool {
	select {
	case p.queue <- ch:
	case <-p.quit:
		return false
	}
	if !parse {
		return true
	}
	select {
	case p.work <- ch:
		return true
	case <-p.quit:
		ch.status = chunkDropped
		close(ch.done)
		return false
	}
}

func (p *csvParallel) parse() {
	defer p.wg.Done()
	for ch := range p.work {
		select {
		case <-p.quit:
			ch.status = chunkDropped
		default:
			p.cpu.DoPaused(func(pause func()) { p.parseChunk(ch, pause) })
			settleRecords(p.ahead, &ch.charged, int64(len(ch.data)), ch.recs, int64(cap(ch.data)))
		}
		close(ch.done)
	}
}

// parseChunk parses ch, pausing at its query's turn after each batch; a
// panic (the query's memory budget refusing an allocation, or a bug) fails
// the chunk, and so the read, not the process: this goroutine is outside
// the dataflow's recovery.
func (p *csvParallel) parseChunk(ch *csvChunk, pause func()) {
	defer func() {
		if r := recover(); r != nil {
			ch.recs, ch.status, ch.err = nil, chunkFailed, dataflow.Recovered("csv parser", r)
		}
	}()
	ch.recs, ch.status = p.plan.parse(ch.data, p.mem, p.batch, pause)
}

// next is the next chunk in file order, parsed; nil at the end. The
// previous chunk's records have all been handed out by then: its share of
// the read-ahead goes back.
func (p *csvParallel) next() *csvChunk {
	if p.last != nil {
		p.ahead.Release(&p.last.charged)
		p.recycle(p.last)
		p.last = nil
	}
	ch, ok := <-p.queue
	if !ok {
		p.dropAll()
		return nil
	}
	<-ch.done
	p.last = ch
	return ch
}

// stop ends the goroutines and releases what they parsed and nobody took.
func (p *csvParallel) stop() {
	select {
	case <-p.quit:
		return
	default:
	}
	close(p.quit)
	p.ahead.Close()
	for ch := range p.queue {
		<-ch.done
		for _, r := range ch.recs {
			r.Release()
		}
	}
	p.wg.Wait()
	p.dropAll()
}
