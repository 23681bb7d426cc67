package sources

import (
	"bytes"
	"io"
	"os"
	"runtime"
	"sync"

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
	f     *os.File
	plan  *csvTyped
	mem   memory.Allocator
	batch int
	size  int // bytes per chunk

	queue chan *csvChunk // in file order, to the reader
	work  chan *csvChunk // to the workers
	quit  chan struct{}
	wg    sync.WaitGroup
	// cpu runs each chunk's parse as a step of the reading query
	// (dataflow.Helper): the parse runs on every core, outside the
	// source's steps.
	cpu *dataflow.Helper
}

type csvChunk struct {
	data   []byte
	off    int64 // file offset of data
	line   int   // line number of its first line
	recs   []arrow.Record
	status chunkStatus
	err    error
	done   chan struct{}
}

// csvChunkBytes is the size of a chunk: large enough that a worker's cost
// per chunk (builders, a record) is amortised, small enough that every core
// gets chunks of a 10 MB file.
const csvChunkBytes = 1 << 20

func startCSVParallel(f *os.File, plan *csvTyped, mem memory.Allocator, batch int, off int64, line int, size int, cpu *dataflow.Helper) *csvParallel {
	workers := max(runtime.GOMAXPROCS(0), 1)
	p := &csvParallel{f: f, plan: plan, mem: mem, batch: batch, size: size, cpu: cpu,
		queue: make(chan *csvChunk, 2*workers+2), work: make(chan *csvChunk, workers), quit: make(chan struct{})}
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
	size := p.size
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
		var err error
		p.cpu.Do(func() {
			buf = make([]byte, len(carry)+fit(size))
			copy(buf, carry)
			n, err = p.f.ReadAt(buf[len(carry):], off+int64(len(carry)))
		})
		buf = buf[:len(carry)+n]
		eof := err == io.EOF
		if end >= 0 && off+int64(len(buf)) > end {
			end = -1 // the file grew: chunks of the full size again
		}
		if err != nil && !eof {
			ch := &csvChunk{off: off, line: line, status: chunkFailed, err: err, done: make(chan struct{})}
			close(ch.done)
			p.send(ch, false)
			return
		}
		if len(buf) == 0 {
			return
		}
		cut := len(buf)
		if !eof {
			i := bytes.LastIndexByte(buf, '\n')
			if i < 0 { // a line longer than the chunk: read more of it
				carry, size = buf, size*2
				continue
			}
			cut = i + 1
		}
		ch := &csvChunk{data: buf[:cut], off: off, line: line, done: make(chan struct{})}
		p.cpu.Do(func() { line += bytes.Count(ch.data, []byte{'\n'}) })
		off += int64(cut)
		carry, size = buf[cut:], p.size
		if !p.send(ch, true) || eof {
			return
		}
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
			p.cpu.Do(func() { p.parseChunk(ch) })
		}
		close(ch.done)
	}
}

// parseChunk parses ch; a panic (the query's memory budget refusing an
// allocation, or a bug) fails the chunk, and so the read, not the process:
// this goroutine is outside the dataflow's recovery.
func (p *csvParallel) parseChunk(ch *csvChunk) {
	defer func() {
		if r := recover(); r != nil {
			ch.recs, ch.status, ch.err = nil, chunkFailed, dataflow.Recovered("csv parser", r)
		}
	}()
	ch.recs, ch.status = p.plan.parse(ch.data, p.mem, p.batch)
}

// next is the next chunk in file order, parsed; nil at the end.
func (p *csvParallel) next() *csvChunk {
	ch, ok := <-p.queue
	if !ok {
		return nil
	}
	<-ch.done
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
	for ch := range p.queue {
		<-ch.done
		for _, r := range ch.recs {
			r.Release()
		}
	}
	p.wg.Wait()
}
