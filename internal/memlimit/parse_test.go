package memlimit

import (
	"math"
	"strings"
	"testing"
)

// TestParseEdges: a size that rounds down to no byte is refused, not read
// as "off"; the largest int64 is read exactly; a size past it is refused
// saying so, not "not a size".
func TestParseEdges(t *testing.T) {
	for in, want := range map[string]int64{
		"9223372036854775807": math.MaxInt64,
		"0.5K":                512, // 0.5 x 1024
		"1.5":                 1,   // a fraction of a byte rounds down
	} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for in, why := range map[string]string{
		"0.5":                  "less than one byte",
		"0.0001K":              "less than one byte", // 0.1024 bytes
		"9223372036854775808":  "over the largest size",
		"8589934592G":          "over the largest size", // 2^33 x 2^30 = 2^63
		"99999999999999999999": "over the largest size",
		"1e30G":                "over the largest size",
		"1e-400":               "less than one byte", // underflows to 0
		"-1G":                  "not a size",
	} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("Parse(%q): %v; want an error saying %q", in, err, why)
		}
	}
}

// TestFormatSmall: a limit under a MiB is written in KiB or bytes, not as
// "0.0 MiB".
func TestFormatSmall(t *testing.T) {
	for b, want := range map[int64]string{
		0: "0 bytes", 1: "1 byte", 1023: "1023 bytes", 1024: "1.0 KiB", 1536: "1.5 KiB",
		1 << 20: "1.0 MiB", 3 << 29: "1.5 GiB",
	} {
		if got := Format(b); got != want {
			t.Errorf("Format(%d) = %q, want %q", b, got, want)
		}
	}
}
