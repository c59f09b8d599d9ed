# Sourced by the HTTP comparisons (wrk.sh, vegeta.sh): the target they share
# and how they time a generator. Not a script of its own.
#
# nginx_start DIR PORT: nginx, one worker pinned to CPU 1 (when there is
# one), `return 200 'ok'` on 127.0.0.1:PORT, from a config of its own in
# DIR, started as a daemon; it waits until nginx answers. nginx_stop DIR
# stops it. $NGINX is the binary.
nginx_start() {
	local dir=$1 port=$2
	mkdir -p "$dir/nginx/logs" "$dir/nginx/tmp"
	cat >"$dir/nginx/nginx.conf" <<EOF
daemon on;
worker_processes 1;
worker_rlimit_nofile 19000;
pid $dir/nginx/nginx.pid;
error_log $dir/nginx/logs/error.log warn;
events { worker_connections 16384; multi_accept on; }
http {
  access_log off;
  client_body_temp_path $dir/nginx/tmp/body;
  proxy_temp_path $dir/nginx/tmp/proxy;
  fastcgi_temp_path $dir/nginx/tmp/fastcgi;
  uwsgi_temp_path $dir/nginx/tmp/uwsgi;
  scgi_temp_path $dir/nginx/tmp/scgi;
  keepalive_requests 1000000;
  keepalive_timeout 75s;
  server {
    listen 127.0.0.1:$port reuseport backlog=4096;
    default_type text/plain;
    location / { return 200 'ok'; }
  }
}
EOF
	"${cpu1[@]}" "$NGINX" -c "$dir/nginx/nginx.conf" -p "$dir/nginx/"
	for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$port/" && return 0; sleep 0.1; done
	echo "nginx did not answer on 127.0.0.1:$port: see $dir/nginx/logs/error.log" >&2
	return 1
}

nginx_stop() {
	local dir=$1
	[ -f "$dir/nginx/nginx.pid" ] && "$NGINX" -c "$dir/nginx/nginx.conf" -p "$dir/nginx/" -s quit 2>/dev/null || true
}

# pin_cpus sets cpu0 and cpu1, the taskset prefixes of the generator and
# the target (empty, with a note, on a machine with one CPU).
pin_cpus() {
	cpu1=(taskset -c 1)
	cpu0=(taskset -c 0)
	if ! taskset -c 1 true 2>/dev/null; then
		echo "note: no CPU 1 here: nothing is pinned, figures mix generator and server" >&2
		cpu1=() cpu0=()
	fi
}

# timed OUT CMD...: runs CMD (pinned to CPU 0 by the caller) under
# /usr/bin/time and writes to OUT "user-s sys-s voluntary-switches
# peak-RSS-KB peak-anonymous-RSS-KB": the last is the largest RssAnon of
# any process under CMD, read from /proc every 0.1 s (the memory the
# generator allocated, without the pages of its binary the kernel mapped).
timed() {
	local out=$1
	shift
	/usr/bin/time -f '%U %S %w %M' -o "$out.t" "$@" &
	local pid=$! anon=0 a
	while kill -0 "$pid" 2>/dev/null; do
		a=$(for p in $(pgrep -P "$pid"; for c in $(pgrep -P "$pid"); do pgrep -P "$c"; done); do
			awk '/^RssAnon:/ {print $2}' "/proc/$p/status" 2>/dev/null
		done | sort -n | tail -n 1) || true # a process may end between pgrep and the read
		[ -n "$a" ] && [ "$a" -gt "$anon" ] && anon=$a
		sleep 0.1
	done
	wait "$pid" || true
	echo "$(tail -n 1 "$out.t") $anon" >"$out"
}

# median reads numbers, one a line, and prints their median.
median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
