#!/bin/sh
# Starts a private PostgreSQL server for the tests, or stops it.
#
#   sh scripts/postgres.sh start DIR   installs PostgreSQL from Debian's packages if
#                                      it is missing, initdb's a cluster in DIR/data
#                                      (as the postgres user when run as root), starts
#                                      it on 127.0.0.1 with its socket in DIR, and
#                                      prints the admin URL on stdout.
#   sh scripts/postgres.sh stop DIR    stops the server started in DIR, by the PID in
#                                      DIR/data/postmaster.pid, and waits for it.
#
# The tests read the URL from TOLLGATE_TEST_POSTGRES_URL; scripts/test.sh does
# both steps. The server trusts local connections and listens only on loopback.
#
# Installing needs root and apt-get. Debian's package would create and start
# a cluster of the system's own; to keep it from doing so,
# /etc/postgresql-common/createcluster.conf says create_main_cluster = false
# during the install only, and is then put back as it was found (or, when
# there was none, as the package installs it). TOLLGATE_PG_ROOT, for the
# script's own test, is prepended to the system paths it reads and writes.
set -eu
root=${TOLLGATE_PG_ROOT:-}

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }

find_bin() {
  for d in "$root"/usr/lib/postgresql/*/bin; do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then echo "$d"; return 0; fi
  done
  return 1
}

conf=$root/etc/postgresql-common/createcluster.conf
saved=""
had_dist=""

# no_main_cluster keeps a copy of createcluster.conf, if there is one, and
# writes one that tells the package not to create a cluster.
no_main_cluster() {
  if [ -e "$conf" ]; then
    saved=$(mktemp)
    cp -p "$conf" "$saved"
  fi
  if [ -e "$conf.ucf-dist" ]; then had_dist=1; fi
  mkdir -p "$(dirname "$conf")"
  echo "create_main_cluster = false" > "$conf"
}

# restore_conf puts createcluster.conf back as no_main_cluster found it; when
# there was none, it is the package's own, and the copy of it that the
# package's configuration tool set aside beside ours is removed.
restore_conf() {
  if [ -n "$saved" ]; then
    cp -p "$saved" "$conf"
    rm -f "$saved"
  elif [ -f "$root/usr/share/postgresql-common/createcluster.conf" ]; then
    cp "$root/usr/share/postgresql-common/createcluster.conf" "$conf"
  else
    rm -f "$conf"
  fi
  if [ -z "$had_dist" ]; then rm -f "$conf.ucf-dist"; fi
}

as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

case "$cmd" in
start)
  if ! bin=$(find_bin); then
    echo "== installing PostgreSQL (Debian packages)" >&2
    if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != 0 ]; then
      echo "the PostgreSQL tests need PostgreSQL's server binaries (/usr/lib/postgresql/*/bin);" \
        "installing them takes root and apt-get (apt-get install postgresql)" >&2
      exit 1
    fi
    # scripts/test.sh updated the lists already when it installed anything.
    if [ -z "${TOLLGATE_APT_UPDATED:-}" ]; then apt-get update -qq >&2; fi
    no_main_cluster
    trap 'restore_conf; exit 130' INT
    trap 'restore_conf; exit 143' TERM
    status=0
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null || status=$?
    restore_conf
    trap - INT TERM
    [ "$status" = 0 ] || exit "$status"
    bin=$(find_bin)
  fi
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
  as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; exit 1; }
  port=""
  for p in 54329 54339 54349 54359 54369 54379 54389 54399; do
    if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $p -k $dir -c fsync=off -c max_connections=200" start >/dev/null 2>&1; then
      port=$p
      break
    fi
  done
  [ -n "$port" ] || { echo "PostgreSQL did not start:" >&2; cat "$dir/server.log" >&2; exit 1; }
  echo "postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
  ;;
stop)
  pidfile="$dir/data/postmaster.pid"
  [ -f "$pidfile" ] || exit 0
  pid=$(head -n 1 "$pidfile")
  # SIGINT is PostgreSQL's fast shutdown.
  kill -INT "$pid" 2>/dev/null || exit 0
  i=0
  while kill -0 "$pid" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  kill -KILL "$pid" 2>/dev/null || true
  ;;
*)
  echo "usage: $0 start|stop DIR" >&2
  exit 2
  ;;
esac
