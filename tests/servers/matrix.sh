#!/usr/bin/env bash
# Runs the test suite (or the pytest arguments given) against each server of the matrix in turn,
# one after another, writing each run's output to $OUT/<server>.log and a summary line per server:
#
#   bash tests/servers/fetch.sh && bash tests/servers/matrix.sh                # every server
#   SERVERS="valkey-9.1 redis-7.4" bash tests/servers/matrix.sh tests/test_acl.py
#
# SERVERS defaults to every server fetched into $REDIS_LEADERBOARD_SERVERS_DIR (see fetch.sh);
# PYTHON to .venv/bin/python; OUT to a new temporary directory; RUN_TIMEOUT (seconds, default
# 3600) bounds each run.
set -uo pipefail

DIR=${REDIS_LEADERBOARD_SERVERS_DIR:-$HOME/.cache/redis-leaderboard/servers}
PYTHON=${PYTHON:-.venv/bin/python}
OUT=${OUT:-$(mktemp -d -t redis-leaderboard-matrix-XXXXXX)}
RUN_TIMEOUT=${RUN_TIMEOUT:-3600}
SERVERS=${SERVERS:-$(cd "$DIR" 2>/dev/null && ls -d valkey-* redis-* 2>/dev/null | tr '\n' ' ')}
[ $# -gt 0 ] || set -- -m "not browser"
mkdir -p "$OUT"

status=0
for name in $SERVERS; do
    case $name in
    valkey-*) server="$DIR/$name/bin/valkey-server" ;;
    *) server="$DIR/$name/bin/redis-server" ;;
    esac
    log="$OUT/$name.log"
    REDIS_LEADERBOARD_SERVER=$server timeout "$RUN_TIMEOUT" "$PYTHON" -m pytest -q -rfEs \
        -p no:cacheprovider "$@" >"$log" 2>&1
    code=$?
    [ $code -eq 0 ] || status=1
    printf '%s\texit %s\t%s\n' "$name" "$code" "$(grep -E '^(=+ )?[0-9]+ (passed|failed)' "$log" | tail -1)"
    if [ $code -ne 0 ]; then
        # The log goes with the temporary directory: what failed, and why, goes on stdout.
        grep -E '^(FAILED|ERROR) ' "$log" | sed "s/^/$name: /"
        sed -n '/^=\+ FAILURES =\+$/,/^=\+ short test summary/p' "$log" | tail -n 80 | sed "s/^/$name| /"
    fi
done
echo "logs: $OUT"
exit $status
