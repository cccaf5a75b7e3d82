package golden

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

func TestFromTraceGzip(t *testing.T) {
	var compressed bytes.Buffer
	zw := gzip.NewWriter(&compressed)
	zw.Write([]byte(smallTrace))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	readsAsPlain(t, &compressed, "gzip")
}

// TestFromTraceInstants: a thread-scoped instant event is a controller
// event of no duration; process- and global-scoped ones are not.
func TestFromTraceInstants(t *testing.T) {
	trace := `{"traceEvents":[
{"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"Controller"}},
{"name":"a","ph":"X","ts":1,"dur":2,"pid":1,"tid":2},
{"name":"g","ph":"i","s":"t","ts":3,"pid":1,"tid":2},
{"name":"h","ph":"i","ts":3,"pid":1,"tid":2},
{"name":"p","ph":"i","s":"p","ts":3,"pid":1,"tid":2},
{"name":"b","ph":"X","ts":3,"dur":1,"pid":1,"tid":2}
]}`
	ctrl, _, err := FromTrace(strings.NewReader(trace))
	if err != nil {
		t.Fatal(err)
	}
	// Sorted by (ts, end, name): a [1,3]; g and h [3,3]; b [3,4].
	want := []Event{{Name: "a", Ts: 1, End: 3}, {Name: "g", Ts: 3, End: 3}, {Name: "h", Ts: 3, End: 3}, {Name: "b", Ts: 3, End: 4}}
	if !reflect.DeepEqual(ctrl, want) {
		t.Errorf("controller %+v, want %+v", ctrl, want)
	}
}
