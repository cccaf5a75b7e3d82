package golden

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Limits on what FromTrace accepts.
const (
	// maxEvents bounds the number of trace events read.
	maxEvents = 1 << 30
	// maxRank bounds a rank named by a device process.
	maxRank = 1 << 24
	// maxRanks bounds the total number of ranks the device processes expand to.
	maxRanks = 1 << 20
)

// zstdMagic starts every zstd frame; gzipMagic every gzip member.
var (
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
	gzipMagic = []byte{0x1f, 0x8b}
)

// rawEvent is one trace event as FromTrace reads it. pid and tid are kept as
// raw JSON so that any id form works as a map key.
type rawEvent struct {
	Name string          `json:"name"`
	Ph   string          `json:"ph"`
	S    string          `json:"s"`
	Ts   float64         `json:"ts"`
	Dur  float64         `json:"dur"`
	Pid  json.RawMessage `json:"pid"`
	Tid  json.RawMessage `json:"tid"`
	Args json.RawMessage `json:"args"`
}

// threadKey names a thread across the trace.
type threadKey struct{ pid, tid string }

// traceReader collects the events FromTrace needs.
type traceReader struct {
	events      int
	procNames   map[string]string
	procRanks   map[string]string // args.ranks of a process standing for a group
	threadNames map[threadKey]string
	threads     map[string][]threadKey // per pid, in order of first sight
	complete    map[threadKey][]Event
	counters    map[string][][2]float64 // per pid, in trace order
}

// FromTrace reads the normal form's controller events and devices off a
// Chrome trace in the object form {"traceEvents":[...]} (the bare array form
// is accepted too), plain, gzip- or zstd-compressed.
//
// The X events of the process named "Controller" are the controller's;
// thread-scoped instant events (ph "i") count as X events of no duration. A
// process named "Device <rank>", or, for a group of identical workers,
// "Device <lowest rank>: ..." with every rank it stands for in args.ranks
// ("a-b,c,d-e"), gives every rank it names a Device: each of its threads becomes
// a stream holding the thread's X events (an empty list when it has none),
// except a thread named exactly like the process, and its C events, in trace
// order, become the memory series [ts, args.allocated]. Other processes are
// ignored. Events are sorted by (ts, end, name) and numbers rounded as in
// the normal form.
func FromTrace(r io.Reader) (controller []Event, devices map[string]*Device, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var src io.Reader = br
	if magic, _ := br.Peek(len(gzipMagic)); bytes.Equal(magic, gzipMagic) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("golden: trace: %w", err)
		}
		defer zr.Close()
		src = zr
	} else if magic, _ := br.Peek(len(zstdMagic)); bytes.Equal(magic, zstdMagic) {
		dec, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, nil, fmt.Errorf("golden: trace: %w", err)
		}
		defer dec.Close()
		src = dec
	}
	tr := &traceReader{
		procNames:   map[string]string{},
		procRanks:   map[string]string{},
		threadNames: map[threadKey]string{},
		threads:     map[string][]threadKey{},
		complete:    map[threadKey][]Event{},
		counters:    map[string][][2]float64{},
	}
	if err := tr.read(json.NewDecoder(src)); err != nil {
		return nil, nil, fmt.Errorf("golden: trace: %w", err)
	}
	controller, devices, err = tr.assemble()
	if err != nil {
		return nil, nil, fmt.Errorf("golden: trace: %w", err)
	}
	return controller, devices, nil
}

// read parses the top level of the trace.
func (tr *traceReader) read(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrFormat, err)
	}
	switch tok {
	case json.Delim('['):
		return tr.readEvents(dec)
	case json.Delim('{'):
	default:
		return fmt.Errorf("%w: trace starts with %v, want an object", ErrFormat, tok)
	}
	found := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%w: %v", ErrFormat, err)
		}
		if key, _ := tok.(string); key == "traceEvents" && !found {
			found = true
			tok, err := dec.Token()
			if err != nil {
				return fmt.Errorf("%w: traceEvents: %v", ErrFormat, err)
			}
			if tok != json.Delim('[') {
				return fmt.Errorf("%w: traceEvents is not an array", ErrFormat)
			}
			if err := tr.readEvents(dec); err != nil {
				return err
			}
			continue
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return fmt.Errorf("%w: %v", ErrFormat, err)
		}
	}
	if !found {
		return fmt.Errorf("%w: no traceEvents", ErrFormat)
	}
	return nil
}

// readEvents reads the events of an array whose '[' was consumed, and the
// closing ']'. A trace cut off before the ']' is accepted, as Chrome does.
func (tr *traceReader) readEvents(dec *json.Decoder) error {
	var ev rawEvent
	for dec.More() {
		if tr.events++; tr.events > maxEvents {
			return fmt.Errorf("%w: more than %d events", ErrLimit, maxEvents)
		}
		ev = rawEvent{}
		if err := dec.Decode(&ev); err != nil {
			return fmt.Errorf("%w: event %d: %v", ErrFormat, tr.events-1, err)
		}
		if err := tr.add(&ev); err != nil {
			return fmt.Errorf("event %d: %w", tr.events-1, err)
		}
	}
	if _, err := dec.Token(); err != nil && err != io.EOF {
		return fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return nil
}

// add records one event.
func (tr *traceReader) add(ev *rawEvent) error {
	pid := string(ev.Pid)
	key := threadKey{pid, string(ev.Tid)}
	switch ev.Ph {
	case "M":
		var args struct {
			Name  *string `json:"name"`
			Ranks *string `json:"ranks"`
		}
		switch ev.Name {
		case "process_name":
			if err := json.Unmarshal(ev.Args, &args); err != nil || args.Name == nil {
				return fmt.Errorf("%w: process_name without args.name", ErrFormat)
			}
			tr.procNames[pid] = *args.Name
			if args.Ranks != nil {
				tr.procRanks[pid] = *args.Ranks
			}
		case "thread_name":
			if err := json.Unmarshal(ev.Args, &args); err != nil || args.Name == nil {
				return fmt.Errorf("%w: thread_name without args.name", ErrFormat)
			}
			tr.sawThread(key)
			tr.threadNames[key] = *args.Name
		}
	case "X":
		tr.sawThread(key)
		tr.complete[key] = append(tr.complete[key], Event{Name: ev.Name, Ts: ev.Ts, End: ev.Ts + ev.Dur})
	case "i", "I":
		// An instant event on a thread ("s" absent or "t") is a span of
		// zero length; process- and global-scoped ones belong to no thread.
		if ev.S != "" && ev.S != "t" {
			return nil
		}
		tr.sawThread(key)
		tr.complete[key] = append(tr.complete[key], Event{Name: ev.Name, Ts: ev.Ts, End: ev.Ts})
	case "C":
		var args struct {
			Allocated *float64 `json:"allocated"`
		}
		if err := json.Unmarshal(ev.Args, &args); err != nil || args.Allocated == nil {
			return fmt.Errorf("%w: counter without a numeric args.allocated", ErrFormat)
		}
		tr.counters[pid] = append(tr.counters[pid], [2]float64{ev.Ts, *args.Allocated})
	}
	return nil
}

func (tr *traceReader) sawThread(key threadKey) {
	if _, ok := tr.threadNames[key]; ok {
		return
	}
	if _, ok := tr.complete[key]; ok {
		return
	}
	tr.threads[key.pid] = append(tr.threads[key.pid], key)
	tr.complete[key] = nil
}

// assemble builds the normal form from the collected events.
func (tr *traceReader) assemble() ([]Event, map[string]*Device, error) {
	controller := []Event{}
	devices := map[string]*Device{}
	ranks := 0
	for pid, pname := range tr.procNames {
		if pname == "Controller" {
			for _, key := range tr.threads[pid] {
				controller = append(controller, tr.complete[key]...)
			}
			continue
		}
		if !strings.HasPrefix(pname, "Device ") {
			continue
		}
		names, err := parseDeviceName(pname, tr.procRanks[pid])
		if err != nil {
			return nil, nil, err
		}
		if ranks += len(names); ranks > maxRanks {
			return nil, nil, fmt.Errorf("%w: device processes name more than %d ranks", ErrLimit, maxRanks)
		}
		d := &Device{Streams: map[string][]Event{}, Memory: [][2]float64{}}
		for _, key := range tr.threads[pid] {
			tname, ok := tr.threadNames[key]
			if !ok {
				tname = key.tid // a thread that was never named
			}
			if tname == pname {
				continue
			}
			evs := d.Streams[tname]
			if evs == nil {
				evs = []Event{}
			}
			d.Streams[tname] = append(evs, tr.complete[key]...)
		}
		d.Memory = append(d.Memory, tr.counters[pid]...)
		d.normalize()
		for i, rank := range names {
			if _, dup := devices[rank]; dup {
				return nil, nil, fmt.Errorf("%w: rank %s (process %q)", ErrDuplicateRank, rank, pname)
			}
			if i == 0 {
				devices[rank] = d
			} else {
				devices[rank] = d.clone()
			}
		}
	}
	normalizeEvents(controller)
	return controller, devices, nil
}

// clone returns a deep copy of d.
func (d *Device) clone() *Device {
	c := &Device{Streams: make(map[string][]Event, len(d.Streams))}
	for name, evs := range d.Streams {
		c.Streams[name] = append([]Event{}, evs...)
	}
	c.Memory = append([][2]float64{}, d.Memory...)
	return c
}

// parseDeviceName returns the ranks, as decimal strings, that a device
// process stands for: "Device 3" is rank 3; a process standing for a group
// of identical ranks is named by its lowest rank and lists them all in
// args.ranks as inclusive runs, "0-1,4,5": ranks 0, 1, 4 and 5.
func parseDeviceName(name, ranksArg string) ([]string, error) {
	head, _, _ := strings.Cut(strings.TrimPrefix(name, "Device "), ":")
	first, ok := parseRank(head)
	if !ok {
		return nil, fmt.Errorf("%w: device process %q", ErrFormat, name)
	}
	if ranksArg == "" {
		return []string{strconv.Itoa(first)}, nil
	}
	var ranks []string
	for _, f := range strings.Split(ranksArg, ",") {
		lo, hi, isRange := strings.Cut(f, "-")
		a, okA := parseRank(lo)
		b, okB := a, true
		if isRange {
			b, okB = parseRank(hi)
		}
		if !okA || !okB || b < a {
			return nil, fmt.Errorf("%w: device process %q: ranks %q", ErrFormat, name, f)
		}
		if len(ranks)+b-a+1 > maxRanks {
			return nil, fmt.Errorf("%w: device process %q names more than %d ranks", ErrLimit, name, maxRanks)
		}
		for r := a; r <= b; r++ {
			ranks = append(ranks, strconv.Itoa(r))
		}
	}
	if ranks[0] != strconv.Itoa(first) {
		return nil, fmt.Errorf("%w: device process %q: named by rank %d, its lowest is %s", ErrFormat, name, first, ranks[0])
	}
	return ranks, nil
}

// parseRank parses a non-negative decimal rank up to maxRank.
func parseRank(s string) (int, bool) {
	if s == "" || len(s) > 8 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n <= maxRank
}
