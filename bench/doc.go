// Package bench holds fastsim's benchmarks: Go benchmarks (go test -bench)
// over histories shipped in the repository, and scripts that run the
// longer measurements outside CI. Nothing here runs in the unit tests.
package bench
