package golden

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/fastsim/fastsim/internal/trace"
)

// writeTrace writes n as a trace the way fastsim does, grouping devices with
// identical content into one process named "Device <i> [a-b] ...", and
// repeating the controller's events on a thread named like each device
// process (which FromTrace must leave out).
func writeTrace(n *Normal) string {
	var out bytes.Buffer
	w := trace.NewWriter(&out)
	ns := func(us float64) int64 { return int64(math.Round(us * 1e3)) }
	bytesOf := func(mb float64) int64 { return int64(math.Round(mb * 1e6)) }

	tid := int64(1)
	w.ProcessName(0, "Controller")
	w.ThreadName(0, tid, "Controller")
	for i, ev := range n.Controller {
		w.Complete(0, tid, ev.Name, ns(ev.Ts), ns(ev.End), int64(i))
	}

	var groups [][]int // ranks of identical devices, by lowest rank
	for _, key := range unionKeys(n.Devices, nil) {
		rank, _ := strconv.Atoi(key)
		found := false
		for g, ranks := range groups {
			if reflect.DeepEqual(n.Devices[strconv.Itoa(ranks[0])], n.Devices[key]) {
				groups[g] = append(ranks, rank)
				found = true
				break
			}
		}
		if !found {
			groups = append(groups, []int{rank})
		}
	}
	for g, ranks := range groups {
		pid := int64(g + 1)
		d := n.Devices[strconv.Itoa(ranks[0])]
		name := "Device " + strconv.Itoa(ranks[0])
		if len(ranks) > 1 {
			name += fmt.Sprintf(": %d ranks", len(ranks))
			w.GroupProcessName(pid, name, rangesOf(ranks))
		} else {
			w.ProcessName(pid, name)
		}
		tid++
		w.ThreadName(pid, tid, name)
		for i, ev := range n.Controller {
			w.Complete(pid, tid, ev.Name, ns(ev.Ts), ns(ev.End), int64(i))
		}
		streams := make([]string, 0, len(d.Streams))
		for s := range d.Streams {
			streams = append(streams, s)
		}
		sort.Strings(streams)
		for _, s := range streams {
			tid++
			// Events in reverse, so that FromTrace has to sort them.
			evs := d.Streams[s]
			for i := len(evs) - 1; i >= 0; i-- {
				w.Complete(pid, tid, evs[i].Name, ns(evs[i].Ts), ns(evs[i].End), int64(i))
			}
			w.ThreadName(pid, tid, s) // metadata after the events
		}
		for _, m := range d.Memory {
			w.Counter(pid, ns(m[0]), bytesOf(m[1]))
		}
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	return out.String()
}

// rangesOf formats sorted ranks as "a-b,c,d-e".
func rangesOf(ranks []int) string {
	var parts []string
	for i := 0; i < len(ranks); {
		j := i
		for j+1 < len(ranks) && ranks[j+1] == ranks[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ranks[i], ranks[j]))
		} else {
			parts = append(parts, strconv.Itoa(ranks[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
