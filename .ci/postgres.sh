# Starts a throw-away PostgreSQL cluster on 127.0.0.1:55432 for the store
# tests (Debian's postgresql package), with database pipebench_test owned by
# user pipebench (password pipebench). Sourced by .ci/run.
start_postgres() {
  local bin dir
  bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  if pg_isready -h 127.0.0.1 -p 55432 >/dev/null 2>&1; then
    echo "already running"
  else
    dir=$(mktemp -d /tmp/pipebench-pg.XXXXXX)
    chown postgres "$dir"
    su postgres -s /bin/sh -c "$bin/initdb -D $dir/data -A trust -U postgres >/dev/null"
    su postgres -s /bin/sh -c "$bin/pg_ctl -D $dir/data -l $dir/log -w -o '-p 55432 -k $dir -c listen_addresses=127.0.0.1' start >/dev/null"
  fi
  psql -h 127.0.0.1 -p 55432 -U postgres -v ON_ERROR_STOP=0 -q <<'SQL' >/dev/null 2>&1 || true
CREATE USER pipebench PASSWORD 'pipebench';
CREATE DATABASE pipebench_test OWNER pipebench;
SQL
  psql -h 127.0.0.1 -p 55432 -U pipebench -d pipebench_test -c 'select 1' >/dev/null
  echo "postgres ready"
}
