#!/usr/bin/env bash
# The release pipeline's steps that need no AWS account, in the order .github/workflows/release.yml
# runs them: one synthesis (cdk.out, left in place for the caller), the end-to-end suite on the
# bundles of that assembly over HTTP on the embedded DynamoDB, the assembly's digest; then the
# hand-off a deploy job gets (a copy, as the artifact's upload and download make one) checked
# against the tested assembly, a changed bundle refused, and the deploy command named, not run.
set -euo pipefail
cd "$(dirname "$0")/.."

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "== synthesize once (no AWS credentials)"
rm -rf cdk.out
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN -u AWS_PROFILE npm run synth

echo "== the end-to-end suite on the bundles of cdk.out"
npm run test:bundles

echo "== the digest of the tested assembly"
digest="$(npm run -s release:digest -- cdk.out --save "$work/tested.json")"
echo "$digest"

echo "== the hand-off: the deploy jobs' copy is the tested assembly"
cp -R cdk.out "$work/handed-over"
npm run -s release:digest -- "$work/handed-over" --check "$work/tested.json" --expect "$digest"

echo "== a bundle changed after the tests is refused"
bundle="$(find "$work/handed-over" -path '*/asset.*/index.mjs' | sort | head -1)"
echo '// changed after the tests' >>"$bundle"
if npm run -s release:digest -- "$work/handed-over" --check "$work/tested.json" --expect "$digest"; then
  echo "release-dry-run: a changed bundle passed the digest check" >&2
  exit 1
fi

echo "== the deploys the pipeline would run on that assembly (not run: no AWS account)"
node -e 'const s=require("./package.json").scripts; for (const n of ["release:deploy:staging","release:deploy:production"]) console.log(`${n}: ${s[n]}`)'
echo "release dry run: passed ($digest)"
