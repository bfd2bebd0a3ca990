#!/usr/bin/env bash
# gcoll_info --cleanup (issue 15, segment lifetime): in /dev/shm, a segment of a dead
# creator older than a minute is removed; one of a dead creator that is fresh, one of a
# live creator, and a file that is not gcoll's stay. --dry-run removes nothing.
# usage: cleanup_check.sh GCOLL_INFO
set -uo pipefail
info=${1:?gcoll_info}
[ -d /dev/shm ] && [ -w /dev/shm ] || { echo "SKIPPED: no writable /dev/shm"; exit 77; }
# A pid that is not alive: a child that has exited.
sh -c 'exit 0' & dead=$!
wait "$dead"
kill -0 "$dead" 2>/dev/null && { echo "SKIPPED: pid $dead reused"; exit 77; }
tag=$$.$RANDOM
stale=/dev/shm/gcoll.$dead.7.cl$tag fresh=/dev/shm/gcoll.$dead.8.cl$tag
live=/dev/shm/gcoll.$$.9.cl$tag other=/dev/shm/gcollx.$dead.cl$tag
trap 'rm -f "$stale" "$fresh" "$live" "$other"' EXIT
for f in "$stale" "$fresh" "$live" "$other"; do head -c 4096 /dev/zero >"$f"; done
touch -d '-5 minutes' "$stale" "$live" "$other"
fail() { echo "FAIL: $*"; exit 1; }
out=$("$info" --cleanup --dry-run) || fail "--dry-run exited $?"
echo "$out"
echo "$out" | grep -q "would remove $stale" || fail "--dry-run does not list $stale"
[ -e "$stale" ] || fail "--dry-run removed $stale"
out=$("$info" --cleanup) || fail "--cleanup exited $?"
echo "$out"
echo "$out" | grep -q "removed $stale" || fail "--cleanup does not report $stale"
[ -e "$stale" ] && fail "$stale (dead creator, 5 minutes old) is still there"
[ -e "$fresh" ] || fail "$fresh (dead creator, fresh) was removed"
[ -e "$live" ] || fail "$live (live creator) was removed"
[ -e "$other" ] || fail "$other (not gcoll's) was removed"
echo PASS
