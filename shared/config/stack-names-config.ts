/**
 * Stack names, e.g. `petstore-production-data`: what `cdk deploy` and the console show, and where
 * the keys CLI and the smoke test find a stage's outputs. Free of aws-cdk-lib, so those load fast.
 */
export const stackName = (stage: string, part: 'data' | 'api'): string =>
  `petstore-${stage}-${part}`
