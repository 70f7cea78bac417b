#!/usr/bin/env bash
# Runs the integration and end-to-end suites against AWS's own DynamoDB Local (Java 17), beside
# the dynalite runs of `npm test`. The jar ships in the npm package amplify-dynamodb-simulator:
# fetched here with `npm pack` (the npm registry is the one source CI may reach), never a
# project dependency, so `npm test` stays Java-free.
set -euo pipefail
cd "$(dirname "$0")/.."

work="$(mktemp -d)"
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

(cd "$work" && npm pack amplify-dynamodb-simulator --silent >/dev/null && tar xzf ./*.tgz)
emulator="$work/package/emulator"
port="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"

echo "DynamoDB Local: $(java -version 2>&1 | head -1), port $port"
java -Djava.library.path="$emulator/DynamoDBLocal_lib" -jar "$emulator/DynamoDBLocal.jar" \
  -inMemory -port "$port" >"$work/dynamodb-local.log" 2>&1 &
pid=$!

# Ready when it answers an HTTP request (any status).
for _ in $(seq 1 100); do
  if curl -s -o /dev/null "http://127.0.0.1:$port"; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then cat "$work/dynamodb-local.log"; exit 1; fi
  sleep 0.2
done

# One file at a time: DynamoDB Local is one JVM on a 2-core machine; parallel suites make it slow
# enough for the SDK time limits to answer 503s that no test expects. The fuzz and load suites run
# at ten times npm test's counts here (test/support/test-scale.ts).
PETSTORE_TEST_SCALE="${PETSTORE_TEST_SCALE:-10}" DYNAMODB_ENDPOINT="http://127.0.0.1:$port" AWS_REGION=us-east-1 \
  AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local \
  npx vitest run --project integration --project e2e --maxWorkers=1 "$@"
