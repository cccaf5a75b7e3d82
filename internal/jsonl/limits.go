package jsonl

// Limits on JSON text (the limits on values are package model's).
const (
	// MaxDepth is the deepest nesting of objects and arrays in one line.
	MaxDepth = 64
	// MaxLineBytes is the longest line a history reader accepts (256 MiB).
	MaxLineBytes = 256 << 20
	// MaxInterned is the most distinct strings a Scanner interns; more are
	// copied instead (one allocation each).
	MaxInterned = 1 << 16
	// MaxInternedBytes is the longest string a Scanner interns.
	MaxInternedBytes = 256
)
