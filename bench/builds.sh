# Sourced by the before/after scripts (carry.sh, layers.sh, engine-ab.sh):
# builds fastsim twice into WORK, "before" from commit BEFORE (exported
# with git archive, so the work tree and its uncommitted changes stay
# out of it) and "after" from this tree, then says which is which and the
# load the machine starts at (the machine is shared: CPU time grows with
# its load). Run from the repository's top.
#
# Usage: build_before_after BEFORE WORK   (makes WORK/before and WORK/after)
build_before_after() {
	local before=$1 work=$2
	mkdir -p "$work/before-src"
	git archive "$before" | tar -x -C "$work/before-src"
	(cd "$work/before-src" && go build -o "$work/before" ./cmd/fastsim)
	go build -o "$work/after" ./cmd/fastsim
	echo "before: $(git rev-parse --short "$before"), after: $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with uncommitted changes)')"
	echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
}
