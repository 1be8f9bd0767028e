#!/usr/bin/env bash
# Serve Debian's Python 3.11 HTML docs (package python3.11-doc) with nginx on 127.0.0.1:$DOCS_PORT.
# nginx's defaults send strong ETags and Last-Modified and answer conditional requests with 304.
# Other Debian docs: DOCS_ROOT=/usr/share/doc/cmake-data/html DOCS_PACKAGE=cmake-doc (make eval).
# Installs nginx and python3.11-doc with apt-get when missing (root, or sudo). Idempotent: does nothing if the
# server already answers. Stop it with: nginx -p "$DOCS_STATE" -c "$DOCS_STATE/nginx.conf" -s stop
set -euo pipefail
PORT=${DOCS_PORT:-8311}
ROOT=${DOCS_ROOT:-/usr/share/doc/python3.11/html}
STATE=${DOCS_STATE:-$PWD/.build/nginx-$PORT}

answers() {
  python3 -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=2)" \
    "http://127.0.0.1:$PORT/index.html" 2>/dev/null
}

need=()
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx)
[ -f "$ROOT/index.html" ] || need+=("${DOCS_PACKAGE:-python3.11-doc}")
if ((${#need[@]})); then
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  echo "installing ${need[*]} with apt-get"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
if answers; then
  echo "docs already served at http://127.0.0.1:$PORT/"
  exit 0
fi
mkdir -p "$STATE/logs" "$STATE/tmp"
cat > "$STATE/nginx.conf" <<CONF
worker_processes 1;
pid $STATE/nginx.pid;
error_log $STATE/logs/error.log;
events { worker_connections 512; }
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    log_format docs '\$status \$body_bytes_sent "\$request" inm="\$http_if_none_match" ims="\$http_if_modified_since"';
    access_log $STATE/logs/access.log docs;
    client_body_temp_path $STATE/tmp/body;
    proxy_temp_path $STATE/tmp/proxy;
    fastcgi_temp_path $STATE/tmp/fastcgi;
    uwsgi_temp_path $STATE/tmp/uwsgi;
    scgi_temp_path $STATE/tmp/scgi;
    server {
        listen 127.0.0.1:$PORT;
        root $ROOT;
        location / { }
    }
}
CONF
PATH="$PATH:/usr/sbin" nginx -p "$STATE" -c "$STATE/nginx.conf"
for _ in $(seq 50); do answers && break; sleep 0.1; done
answers || { echo "nginx did not come up; see $STATE/logs/error.log" >&2; exit 1; }
echo "serving $ROOT at http://127.0.0.1:$PORT/ (access log: $STATE/logs/access.log)"
