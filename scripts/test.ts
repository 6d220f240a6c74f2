/**
 * `npm test`: the generated Lua module, then at once the type check (`tsc --noEmit`), the linter
 * (Biome) and the build (dist/, which the CLI and packed-package tests use); Vitest starts as soon
 * as the build is done, while the type check may still run. The type check and the linter print
 * their output when they end; Vitest prints as it goes. Once every step has ended, it exits with
 * a failing step's code (the build's, the type check's, the linter's, then Vitest's), else 0.
 *
 * Arguments go to Vitest: `npm test -- test/http` runs the files under test/http (after the same
 * checks).
 *
 * Run one after the other, the steps before Vitest took about 35 s of a 325 s run on one host;
 * run this way, the whole took 289 s there (docs/adr/0044-test-files-share-modules.md).
 *
 * Usage: `npm test [-- <vitest arguments>]`
 */
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const resolve = createRequire(import.meta.url).resolve;

interface Step {
  name: string;
  /** Node arguments: a script and its own arguments. */
  args: string[];
  /** Print its output as it comes (else all at once when it ends). */
  live?: boolean;
}

/** Runs a step with this process's Node; resolves to its exit code. */
function run({ name, args, live }: Step): Promise<number> {
  const started = performance.now();
  return new Promise((done) => {
    const child = spawn(process.execPath, args, {
      cwd: root,
      stdio: live ? "inherit" : ["ignore", "pipe", "pipe"],
    });
    const output: Buffer[] = [];
    child.stdout?.on("data", (chunk: Buffer) => output.push(chunk));
    child.stderr?.on("data", (chunk: Buffer) => output.push(chunk));
    child.on("error", (error) => {
      output.push(Buffer.from(`${error.message}\n`));
      finish(1);
    });
    child.on("close", (code, signal) => finish(code ?? (signal ? 1 : 0)));
    let ended = false;
    function finish(code: number) {
      if (ended) return;
      ended = true;
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      const text = Buffer.concat(output).toString("utf8").trimEnd();
      const verdict = code === 0 ? "passed" : `FAILED (exit ${code})`;
      process.stdout.write(`\n── ${name}: ${verdict} in ${seconds} s\n${text ? `${text}\n` : ""}`);
      done(code);
    }
  });
}

const tsx = ["--import", "tsx"];
// vitest's package exports do not include its bin script.
const vitestBin = join(dirname(resolve("vitest/package.json")), "vitest.mjs");
const gen = await run({ name: "gen", args: [...tsx, join(root, "scripts/gen-lua.ts")] });
if (gen !== 0) process.exit(gen);

const typecheck = run({
  name: "typecheck (tsc --noEmit)",
  args: [resolve("typescript/bin/tsc"), "--noEmit"],
});
const lint = run({
  name: "lint (biome check .)",
  args: [resolve("@biomejs/biome/bin/biome"), "check", "."],
});
// The type check above covers the sources the build compiles.
const build = await run({
  name: "build (unchecked emit)",
  args: [...tsx, join(root, "scripts/build.ts"), "--no-check"],
});
const vitest =
  build === 0
    ? run({
        name: "vitest",
        args: [vitestBin, "run", ...process.argv.slice(2)],
        live: true,
      })
    : Promise.resolve(build);

const codes = await Promise.all([typecheck, lint, vitest]);
const failed = [build, ...codes].find((code) => code !== 0);
process.exit(failed ?? 0);
