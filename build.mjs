// Bundles the front end with esbuild: static/src/main.js (the app) and
// static/src/diff-worker.js (the Web Worker that diffs texts) into static/dist/, and the
// static report's page (static/src/report.js) into static/dist/report.js.
//   node build.mjs            production build (minified, with source maps)
//   node build.mjs --watch    rebuild on change, unminified
//   IRX_NOMINIFY=1 node build.mjs   a production build left readable (for profiling)
import { mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const root = path.dirname(fileURLToPath(import.meta.url));
const outdir = path.join(root, "static", "dist");
const watch = process.argv.includes("--watch");

/** @type {import("esbuild").BuildOptions} */
const options = {
  absWorkingDir: root,
  entryPoints: {
    main: "static/src/main.js",
    "diff-worker": "static/src/diff-worker.js",
    "graph-layout-worker": "static/src/graph/layout-worker.js",
  },
  outdir,
  bundle: true,
  format: "esm",
  splitting: true, // viz.js (Graphviz wasm) becomes a chunk loaded on first diagram
  chunkNames: "chunks/[name]-[hash]",
  target: ["es2022"],
  platform: "browser",
  sourcemap: true,
  minify: process.env.IRX_NOMINIFY ? false : !watch,
  legalComments: "linked",
  logLevel: "info",
  define: { "process.env.NODE_ENV": watch ? '"development"' : '"production"' },
};

/** The static report (`explorer report`): one classic script, every chunk inlined (it is
 * written into an HTML file opened from file://, where module chunks cannot load). */
const reportOptions = {
  ...options,
  entryPoints: { report: "static/src/report.js" },
  format: "iife",
  splitting: false,
  sourcemap: false,
  legalComments: "none",
};

async function main() {
  await rm(outdir, { recursive: true, force: true });
  await mkdir(outdir, { recursive: true });
  if (watch) {
    const ctx = await esbuild.context(options);
    await ctx.watch();
    return;
  }
  const result = await esbuild.build({ ...options, metafile: true });
  await writeFile(path.join(outdir, "meta.json"), JSON.stringify(result.metafile));
  await esbuild.build(reportOptions);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
