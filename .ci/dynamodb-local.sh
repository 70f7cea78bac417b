#!/usr/bin/env bash
# Runs the integration and end-to-end suites against AWS's own DynamoDB Local (Java 17), beside
# the dynalite runs of `npm test`. The jar ships in the npm package amplify-dynamodb-simulator:
# fetched here with `npm pack` (the npm registry is the one source CI may reach), never a
# project dependency, so `npm test` stays Java-free.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=.ci/lib.sh
source .ci/lib.sh

(cd "$work" && npm pack amplify-dynamodb-simulator --silent >/dev/null && tar xzf ./*.tgz)
emulator="$work/package/emulator"
port="$(free_port)"

echo "DynamoDB Local: $(java -version 2>&1 | head -1), port $port"
# -sharedDb: one database whatever the credentials (DynamoDB Local otherwise keeps one per access
# key and Region). A deployed function signs its management calls and its DynamoDB calls with one
# role; locally the key sync's bundle signs both with the control plane's secret, while the server
# that made its tables used the operator's credentials.
java -Djava.library.path="$emulator/DynamoDBLocal_lib" -jar "$emulator/DynamoDBLocal.jar" \
  -inMemory -sharedDb -port "$port" >"$work/dynamodb-local.log" 2>&1 &
pid=$!

# Ready when it answers an HTTP request (any status).
wait_until_answers "http://127.0.0.1:$port" "$work/dynamodb-local.log"

# One file at a time: DynamoDB Local is one JVM on a 2-core machine; parallel suites make it slow
# enough for the SDK time limits to answer 503s that no test expects. The fuzz and load suites run
# at ten times npm test's counts here (test/support/test-scale.ts).
export DYNAMODB_ENDPOINT="http://127.0.0.1:$port" AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local
# The sources first (PETSTORE_BUNDLES would put the bundles behind the e2e servers too).
env -u PETSTORE_BUNDLES PETSTORE_TEST_SCALE="${PETSTORE_TEST_SCALE:-10}" PETSTORE_SLOW_TESTS=1 \
  npx vitest run --project integration --project e2e --project slow --maxWorkers=1 "$@"

# With PETSTORE_BUNDLES (a cloud assembly, .ci/run: the one the release dry run tested), the
# end-to-end suite again on its bundles, each function in a process of its own, on this DynamoDB
# Local: the deployable code over plain HTTP on AWS's own emulator. At npm test's scale: the
# bundles' HTTP path is the subject here, not the volume.
if [ -n "${PETSTORE_BUNDLES:-}" ]; then
  echo "DynamoDB Local: the bundles of $PETSTORE_BUNDLES"
  PETSTORE_TEST_SCALE=1 npx vitest run --project bundles --maxWorkers=1
fi
