#!/usr/bin/env bash
# section.sh FILE NAME: replaces the lines of FILE between the marker lines
#   <!-- begin NAME -->
#   <!-- end NAME -->
# with standard input, and keeps every other byte of FILE as it was (the
# markers too). When FILE has no such section, the section is appended at the
# end, markers and all, after one blank line. Several scripts write
# bench/RESULTS.md, each its own sections: this is how none of them erases
# another's.
set -euo pipefail
file=$1
name=$2
begin="<!-- begin $name -->"
end="<!-- end $name -->"
new=$(mktemp "$file.section.XXXXXX")
trap 'rm -f "$new" "$new.body"' EXIT
cat >"$new.body"
# The end marker goes on a line of its own.
if [ -s "$new.body" ] && [ -n "$(tail -c1 "$new.body")" ]; then echo >>"$new.body"; fi
nb=$(grep -c -x -F -- "$begin" "$file" || true)
ne=$(grep -c -x -F -- "$end" "$file" || true)
if [ "$nb" = 0 ] && [ "$ne" = 0 ]; then
	{ cat "$file"; [ -s "$file" ] && [ -n "$(tail -c1 "$file")" ] && echo; [ -s "$file" ] && echo; echo "$begin"; cat "$new.body"; echo "$end"; } >"$new"
elif [ "$nb" = 1 ] && [ "$ne" = 1 ]; then
	lb=$(grep -n -x -F -- "$begin" "$file" | cut -d: -f1)
	le=$(grep -n -x -F -- "$end" "$file" | cut -d: -f1)
	if [ "$lb" -ge "$le" ]; then
		echo "$file: section $name ends (line $le) before it begins (line $lb)" >&2
		exit 2
	fi
	{ head -n "$lb" "$file"; cat "$new.body"; tail -n "+$le" "$file"; } >"$new"
else
	echo "$file: section $name has $nb begin and $ne end markers, want one of each" >&2
	exit 2
fi
chmod --reference="$file" "$new" 2>/dev/null || true
mv "$new" "$file"
