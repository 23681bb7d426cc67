package sources

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"

	"github.com/tierflow/tierflow/dataflow"
)

// OpenParquetTable opens path as OpenParquet does, for a table: its row
// groups are decoded on every core, each by a reader of its own (arrow/go's
// readers are not shared between goroutines), and handed out in file order,
// with the rows, errors and row numbers of a sequential read. A file of one
// row group, or a process with one core, is read sequentially.
func OpenParquetTable(path string, schema *arrow.Schema, batch int, mem memory.Allocator, policy OnError, report *Report, bounds ...Bound) (Reader, error) {
	return OpenParquetScan(path, schema, batch, mem, policy, report, ParquetScan{Bounds: bounds})
}

// ParquetScan is what a query tells the reader of a table's Parquet file
// beyond the columns it reads.
type ParquetScan struct {
	// Bounds skip the row groups whose statistics show that no row passes
	// the query's filter.
	Bounds []Bound
	// Codes names STRING columns that the query only groups by. Where the
	// file stores one as a dictionary, its batches carry it as an Arrow
	// dictionary array (int32 codes into the row group's values; the
	// batch's schema says so, Schema stays STRING), and its strings are
	// never built per row. Every batch then holds the rows of one row
	// group, as each has its own dictionary.
	Codes []string
}

// OpenParquetScan is OpenParquetTable with everything the scan says.
func OpenParquetScan(path string, schema *arrow.Schema, batch int, mem memory.Allocator, policy OnError, report *Report, scan ParquetScan) (Reader, error) {
	r, err := openParquet(path, schema, batch, mem, policy, report, scan)
	if err != nil {
		return nil, err
	}
	seq := r.(*recordReader)
	workers := min(runtime.GOMAXPROCS(0), len(seq.pq.groups))
	if workers < 2 && (len(scan.Codes) == 0 || len(seq.pq.groups) < 2) {
		return r, nil
	}
	// (One core and codes over several row groups: one worker reads a row
	// group at a time, each batch with its own group's dictionary.)
	return &parquetParallel{seq: seq, workers: max(workers, 1), policy: policy, report: report}, nil
}

// parquetParallel reads row groups on workers goroutines; Next takes their
// records in row-group order.
type parquetParallel struct {
	// cpu runs each row group's decoding as a step of the reading query
	// (dataflow.Helper): it runs on every core, outside the source's steps.
	cpu     *dataflow.Helper
	seq     *recordReader // the sequential reader: schema, plan, file
	workers int
	policy  OnError
	report  *Report

	queue   chan *rowGroupTask
	work    chan *rowGroupTask
	quit    chan struct{}
	wg      sync.WaitGroup
	started bool

	cur []arrow.Record
	err error // after cur: the error that ended the read

	// ahead bounds the row groups in flight by the bytes of their records
	// (readahead.go), whatever workers is; last is the group whose
	// records Next is handing out, released when it takes the next.
	ahead *dataflow.ReadAheadGate
	last  *rowGroupTask
}

type rowGroupTask struct {
	group int
	first int64 // rows of the groups before it, for row numbers in errors
	rows  int64 // its rows: what its charge against the read-ahead is estimated by
	// charged is what it holds against the read-ahead allowance.
	charged int64
	recs    []arrow.Record
	rep     *Report // bad rows skipped, merged into the query's in order
	err     error
	done    chan struct{}
}

func (p *parquetParallel) Schema() *arrow.Schema { return p.seq.Schema() }

// UseCPU runs the row groups' decoding as steps of the reading query
// (Source.Open hands it the instance's helper).
func (p *parquetParallel) UseCPU(h *dataflow.Helper) { p.cpu = h }

func (p *parquetParallel) start() {
	p.started = true
	p.queue = make(chan *rowGroupTask, p.workers+1)
	p.work = make(chan *rowGroupTask, p.workers)
	p.quit = make(chan struct{})
	p.ahead = dataflow.NewReadAheadGate(p.seq.pq.mem)
	p.wg.Add(1 + p.workers)
	go p.dispatch()
	for range p.workers {
		go p.read()
	}
}

func (p *parquetParallel) dispatch() {
	defer p.wg.Done()
	defer close(p.work)
	defer close(p.queue)
	var first int64
	for i, g := range p.seq.pq.groups {
		// Charged before it is decoded: under a small budget the
		// dispatcher waits here for Next to take what is ahead.
		charged, ok := p.ahead.Acquire(p.seq.pq.rows[i])
		if !ok {
			return
		}
		t := &rowGroupTask{group: g, first: first, rows: p.seq.pq.rows[i], charged: charged, rep: &Report{}, done: make(chan struct{})}
		first += p.seq.pq.rows[i]
		select {
		case p.queue <- t:
		case <-p.quit:
			return
		}
		select {
		case p.work <- t:
		case <-p.quit:
			close(t.done)
			return
		}
	}
}

// read decodes row groups with a file reader of its own.
func (p *parquetParallel) read() {
	defer p.wg.Done()
	var fr *pqarrow.FileReader
	var f *os.File
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	for t := range p.work {
		select {
		case <-p.quit:
		default:
			if fr == nil {
				f, fr, t.err = p.open()
			}
			if fr != nil {
				p.cpu.Do(func() { t.err = p.readGroupRecovered(fr, t) })
			}
			settleRecords(p.ahead, &t.charged, t.rows, t.recs, 0)
		}
		close(t.done)
	}
}

func (p *parquetParallel) open() (f *os.File, fr *pqarrow.FileReader, err error) {
	path := p.seq.path
	defer guard(path, &err)
	if f, err = os.Open(path); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrBadFile, err)
	}
	pf, err := newParquetReader(f, p.seq.pq.pages)
	if err == nil {
		fr, err = pqarrow.NewFileReader(pf, p.seq.pq.dictProps, p.seq.pq.mem)
	}
	if err == nil && p.seq.pq.stored != nil {
		readAsStored(fr)
	}
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrBadFile, path, err)
	}
	return f, fr, nil
}

func (p *parquetParallel) readGroup(fr *pqarrow.FileReader, t *rowGroupTask) (err error) {
	defer guard(p.seq.path, &err)
	rr, err := fr.GetRecordReader(context.Background(), p.seq.pq.leaves, []int{t.group})
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadFile, p.seq.path, err)
	}
	r := &recordReader{path: p.seq.path, rr: rr, want: p.seq.want, errs: rowErrors{p.policy, t.rep}, rows: t.first, pq: p.seq.pq, codes: newCodeColumns(p.seq.pq.codes)}
	defer r.Close()
	for {
		rec, err := r.Next(p.seq.pq.mem)
		if err != nil || rec == nil {
			return err
		}
		t.recs = append(t.recs, rec)
	}
}

func (p *parquetParallel) Next(memory.Allocator) (arrow.Record, error) {
	if !p.started {
		p.start()
	}
	for {
		if len(p.cur) > 0 {
			r := p.cur[0]
			p.cur[0], p.cur = nil, p.cur[1:]
			return r, nil
		}
		if p.err != nil {
			return nil, p.err
		}
		if p.last != nil {
			p.ahead.Release(&p.last.charged)
			p.last = nil
		}
		t, ok := <-p.queue
		if !ok {
			p.ahead.Close() // its share goes to the query's other readers
			return nil, nil
		}
		<-t.done
		p.last = t
		if p.report != nil {
			p.report.absorb(t.rep)
		}
		p.cur, p.err = t.recs, t.err
	}
}

// Close stops the workers, releases the records they decoded ahead and
// closes the file.
func (p *parquetParallel) Close() error {
	if p.started {
		close(p.quit)
		p.ahead.Close()
		for t := range p.queue {
			<-t.done
			for _, r := range t.recs {
				r.Release()
			}
		}
		p.wg.Wait()
		p.started = false
	}
	for _, r := range p.cur {
		r.Release()
	}
	p.cur = nil
	return p.seq.Close()
}

// readGroupRecovered is readGroup with a panic (the query's memory budget
// refusing an allocation, or a bug) as the task's error: this goroutine
// is outside the dataflow's recovery.
func (p *parquetParallel) readGroupRecovered(fr *pqarrow.FileReader, t *rowGroupTask) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = dataflow.Recovered("parquet reader", r)
		}
	}()
	return p.readGroup(fr, t)
}
