#!/usr/bin/env bash
# The management-API half of the project against moto, an AWS emulator written independently of
# it (test/moto): moto's CloudFormation creates the synthesized data stack, SDK calls read from
# the synthesized API template make its REST API, stage and usage plans, and the real key sync,
# every keys CLI command and the smoke test's key handling run against it, beside the same
# scenario on the local control plane. moto_server is a Python tool on these machines
# (~/.pyenv/shims), never a project dependency: CI fails without it.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:$HOME/.pyenv/shims"
command -v moto_server >/dev/null || { echo "moto_server is required (pip install 'moto[server]')"; exit 1; }

# shellcheck source=.ci/lib.sh
source .ci/lib.sh

port="$(free_port)"
moto_server -H 127.0.0.1 -p "$port" >"$work/moto.log" 2>&1 &
pid=$!
echo "moto: $(python3 -c 'import moto; print(moto.__version__)' 2>/dev/null || echo '?'), port $port"

# The templates as an operator's `cdk deploy` would deploy them, with no AWS credentials.
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN -u AWS_PROFILE \
  npx cdk synth -q --output "$work/cdk.out" >/dev/null

wait_until_answers "http://127.0.0.1:$port/moto-api/" "$work/moto.log"

PETSTORE_MOTO=1 PETSTORE_MOTO_ASSEMBLY="$work/cdk.out" AWS_ENDPOINT_URL="http://127.0.0.1:$port" \
  AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=moto AWS_SECRET_ACCESS_KEY=moto \
  AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null POWERTOOLS_METRICS_DISABLED=true \
  npx vitest run --project moto "$@"
