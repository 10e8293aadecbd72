# Sourced by scripts/test and scripts/cost: starts the moto server (tests/moto/serve.py) on a free
# 127.0.0.1 port, exports the AWS variables pointing at it, and stops it when the script exits.
# Needs $venv (the project venv with moto[server]) and $cache.
start_moto() {
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$venv/bin/python" "$root/tests/moto/serve.py" 127.0.0.1 "$port" >"$cache/moto.log" 2>&1 &
  moto_pid=$!
  trap 'kill "$moto_pid" 2>/dev/null || true' EXIT
  for _ in $(seq 100); do
    curl -sf -o /dev/null "http://127.0.0.1:$port/moto-api/" && break
    kill -0 "$moto_pid" 2>/dev/null || { cat "$cache/moto.log"; return 1; }
    sleep 0.2
  done
  export AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test \
    AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
  echo "moto on $AWS_ENDPOINT_URL"
}
