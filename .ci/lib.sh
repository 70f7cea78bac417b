# What .ci/moto.sh and .ci/dynamodb-local.sh share, sourced (never run): a scratch directory and
# the server started in the background ($pid), both gone when the script exits; a free port; the
# wait until that server answers.

work="$(mktemp -d)"
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# A port nothing listens on now (the OS picks it; the server started next takes it).
free_port() {
  node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# wait_until_answers URL LOG: until the server answers an HTTP request (any status), at most 20 s;
# a server that died meanwhile ends the script with its log.
wait_until_answers() {
  for _ in $(seq 1 100); do
    if curl -s -o /dev/null "$1"; then return 0; fi
    if ! kill -0 "$pid" 2>/dev/null; then cat "$2"; exit 1; fi
    sleep 0.2
  done
}
