import { buildSync, type Metafile } from 'esbuild'

/**
 * What esbuild finds when it bundles `entry` without writing anything (packages left external):
 * every module of the project the entry loads, and their imports.
 */
export const moduleGraph = (entry: string, absWorkingDir?: string): Metafile =>
  buildSync({
    entryPoints: [entry],
    ...(absWorkingDir ? { absWorkingDir } : {}),
    bundle: true,
    write: false,
    metafile: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    logLevel: 'silent',
  }).metafile
