#!/usr/bin/env bash
# pg_fixture.sh - a throwaway PostgreSQL server for the fleet tier's tests, in a
# directory the test owns, reachable only through a Unix socket in that directory.
#
#   pg_fixture.sh start DIR      initdb (first time) and start; prints the connection
#                                string on stdout
#   pg_fixture.sh stop DIR       stop it at once (-m immediate: as a crash would)
#   pg_fixture.sh restart DIR    start it again after a stop
#   pg_fixture.sh signal DIR SIG send SIG (STOP, CONT) to the server and its backends,
#                                by their process ids: a server that stops answering
#   pg_fixture.sh sql DIR QUERY  run QUERY with psql, rows on stdout (-At)
#   pg_fixture.sh destroy DIR    stop it if it runs and remove DIR/pg
#
# PostgreSQL refuses to run as root, so when this runs as root the server runs as user
# `nobody` (runuser), in DIR/pg which it owns; DIR itself is made traversable.  The
# server binaries are taken from $CONVFIND_PG_BINDIR, else from PATH, else from the
# newest /usr/lib/postgresql/*/bin (Debian's `postgresql`); without them the script
# exits 77, which ctest reports as a skip, after saying why.  Nothing listens on TCP.
# Two roles: `convfind` (trust) and `secretuser` (password "right-password", checked),
# so that tests can make authentication fail.
set -euo pipefail

cmd=${1:-}
dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
    echo "usage: $0 start|stop|restart|signal|sql|destroy DIR [ARG]" >&2
    exit 2
fi
pg=$(cd "$dir" && pwd)/pg
data=$pg/data
port=5432

bindir=${CONVFIND_PG_BINDIR:-}
if [ -z "$bindir" ]; then
    if command -v initdb >/dev/null 2>&1; then
        bindir=$(dirname "$(readlink -f "$(command -v initdb)")")
    else
        bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    fi
fi
for tool in initdb pg_ctl psql; do
    if [ -z "$bindir" ] || [ ! -x "$bindir/$tool" ]; then
        echo "SKIPPED: no PostgreSQL server binaries ($tool not found; Debian: postgresql," \
            "or set CONVFIND_PG_BINDIR): the fleet tier's server tests did not run" >&2
        exit 77
    fi
done

# as_server CMD...: runs CMD as the server's user.
as_server() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u nobody -- "$@"
    else
        "$@"
    fi
}

conninfo="host=$pg port=$port user=convfind dbname=postgres"

server_pids() {
    local main
    main=$(head -n 1 "$data/postmaster.pid" 2>/dev/null || true)
    [ -n "$main" ] || return 0
    echo "$main"
    ps -o pid= --ppid "$main" || true
}

case $cmd in
start)
    if [ ! -d "$data" ]; then
        mkdir -p "$pg"
        if [ "$(id -u)" -eq 0 ]; then
            chmod 755 "$dir"
            chown nobody "$pg"
        fi
        as_server "$bindir/initdb" -D "$data" -U convfind --auth=trust -E UTF8 --no-sync \
            >"$pg/initdb.log" 2>&1 || {
            cat "$pg/initdb.log" >&2
            exit 1
        }
        printf 'local all secretuser scram-sha-256\nlocal all all trust\n' \
            | as_server tee "$data/pg_hba.conf" >/dev/null
        fresh=1
    fi
    as_server "$bindir/pg_ctl" -D "$data" -l "$pg/server.log" -w -t 60 start \
        -o "-c listen_addresses='' -c unix_socket_directories='$pg' -p $port -c fsync=off -c max_connections=60 -c shared_buffers=16MB" \
        >/dev/null || {
        cat "$pg/server.log" >&2
        exit 1
    }
    if [ "${fresh:-0}" = 1 ]; then
        "$bindir/psql" -X -q -v ON_ERROR_STOP=1 "$conninfo" \
            -c "CREATE ROLE secretuser LOGIN PASSWORD 'right-password'"
    fi
    echo "$conninfo"
    ;;
restart)
    exec "$0" start "$dir" >/dev/null
    ;;
stop)
    as_server "$bindir/pg_ctl" -D "$data" -m immediate -w stop >/dev/null
    ;;
signal)
    for pid in $(server_pids); do
        kill -"${3:?signal name}" "$pid" 2>/dev/null || true
    done
    ;;
sql)
    "$bindir/psql" -X -q -At -v ON_ERROR_STOP=1 "$conninfo" -c "${3:?query}"
    ;;
destroy)
    if [ -f "$data/postmaster.pid" ]; then
        for pid in $(server_pids); do
            kill -CONT "$pid" 2>/dev/null || true
        done
        as_server "$bindir/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$pg"
    ;;
*)
    echo "$0: unknown command '$cmd'" >&2
    exit 2
    ;;
esac
