// Package golden reads replays into the normal form of the golden files
// (testdata/golden/README.md) and compares them.
//
// A NAME.expected.json file holds the normal form the reference simulator
// reported; LoadExpected reads it. FromTrace reads the same form off a Chrome
// trace written by fastsim, expanding grouped device processes to their
// ranks. Compare lists the differences between two normal forms, allowing a
// relative error of 1e-6 on every number.
package golden
