# Sourced by the bench scripts that measure on a shared machine: how busy
# its cores are, and a wait for the rest of it to be quiet.
#
# busy: the machine's busy clock ticks so far (/proc/stat: user, nice,
# system, irq, softirq), CLK_TCK of them a core-second.
# quiet TENTHS TRIES: waits until a 2 s window has under TENTHS/10 cores
# busy, at most TRIES windows; returns 0 either way (a machine that
# never quiets is measured anyway), so that a script under `set -e`
# goes on.
hz=$(getconf CLK_TCK)
busy() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
quiet() {
	local a b
	for _ in $(seq "$2"); do
		a=$(busy)
		sleep 2
		b=$(busy)
		[ $((b - a)) -lt $((hz * $1 / 10)) ] && return 0
	done
	return 0
}
