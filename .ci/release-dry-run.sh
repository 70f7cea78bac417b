#!/usr/bin/env bash
# The release pipeline's steps that need no AWS account, in the order .github/workflows/release.yml
# runs them: one synthesis (cdk.out, left in place for the caller), the end-to-end suite on the
# bundles of that assembly over HTTP on the embedded DynamoDB, the assembly's digest; then the
# hand-off a deploy job gets (a copy, as the artifact's upload and download make one) checked
# against the tested assembly, a changed bundle and an empty expectation refused, a setting given
# with -c that cdk.json does not hold refused by the CDK CLI's synthesis; production's plan against
# an assembly standing in for production as deployed (a hand deploy that gave an alarm email on the
# command line), the approver's summary printed with the removed alarm subscription first; and the
# deploy commands named, not run.
set -euo pipefail
cd "$(dirname "$0")/.."

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "== synthesize once (no AWS credentials)"
rm -rf cdk.out
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN -u AWS_PROFILE npm run synth

# CI (.ci/run) runs this suite once, on AWS's DynamoDB Local right after, on this same cdk.out
# (PETSTORE_DRY_RUN_BUNDLES=later); anywhere else it runs here, as the workflow runs it.
if [ "${PETSTORE_DRY_RUN_BUNDLES:-here}" = later ]; then
  echo "== the end-to-end suite on the bundles of cdk.out: run next by the caller, on DynamoDB Local"
else
  echo "== the end-to-end suite on the bundles of cdk.out"
  npm run test:bundles
fi

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

echo "== an empty expectation is refused (exit 2): it would accept any assembly"
status=0
npm run -s release:digest -- "$work/handed-over" --expect "" 2>"$work/empty.txt" || status=$?
if [ "$status" -ne 2 ] || ! grep -q 'would accept any assembly' "$work/empty.txt"; then
  echo "release-dry-run: an empty --expect was not refused (exit $status)" >&2
  exit 1
fi

echo "== a -c setting cdk.json does not hold is refused at synthesis"
if env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN -u AWS_PROFILE \
  npx cdk synth -q -o "$work/refused.out" -c production.alarmEmail=ops@example.com >"$work/refused.txt" 2>&1; then
  echo "release-dry-run: synthesis took -c production.alarmEmail" >&2
  exit 1
fi
grep -q 'cdk.json does not hold that' "$work/refused.txt" || {
  cat "$work/refused.txt" >&2
  echo "release-dry-run: the refusal does not name cdk.json" >&2
  exit 1
}

echo "== production's plan against production as deployed: the approver's summary"
# What release:plan prints from CloudFormation's change sets, made here offline from the templates
# (no AWS account). The deployed stand-in has an alarm email subscription the release does not:
# the summary must say first that it is deleted.
npx node --import tsx test/support/deployed-assembly-cli.ts "$work/deployed"
npm run -s release:summary -- --deployed "$work/deployed" --app cdk.out --stage production | tee "$work/summary.md"
first_section="$(grep -m1 '^### ' "$work/summary.md")"
first_row="$(awk '/^### /{n++} n==1 && /^\| `/{print; exit}' "$work/summary.md")"
if [ "$first_section" != "### Removals (1)" ] ||
  ! grep -q '`AWS::SNS::Subscription` | deleted |' <<<"$first_row"; then
  echo "release-dry-run: the summary does not show the removed alarm subscription first ($first_section; $first_row)" >&2
  exit 1
fi

echo "== the deploys the pipeline would run on that assembly (not run: no AWS account)"
node -e 'const s=require("./package.json").scripts; for (const n of ["release:deploy:staging","release:plan","release:apply"]) { if (!s[n]) { console.error(`release-dry-run: no ${n} script`); process.exit(1) } console.log(`${n}: ${s[n]}`) }'
echo "release dry run: passed ($digest)"
