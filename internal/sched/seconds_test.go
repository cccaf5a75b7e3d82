package sched

import "testing"

// TestSecondsText: the report's seconds are rounded from the integer
// nanoseconds, a half microsecond up, whatever the binary value of the
// float seconds (0.0123025 is below its decimal, 0.0043125 above).
func TestSecondsText(t *testing.T) {
	for ns, want := range map[int64]string{
		0: "0.000000", 499: "0.000000", 500: "0.000001", 12_302_500: "0.012303", 4_312_500: "0.004313",
		4_312_499: "0.004312", 1_000_000_000: "1.000000", 3_599_999_999_500: "3600.000000", -1500: "-0.000002",
	} {
		if got := SecondsText(ns); got != want {
			t.Errorf("SecondsText(%d) = %s, want %s", ns, got, want)
		}
	}
}
