/**
 * `npm run size`: measure what a user installs and deploys, and write the figures into README.md
 * (between `<!-- size:… -->` markers): the packed tarball (files, packed and unpacked bytes) and
 * the README's Cloudflare Worker bundled by `wrangler deploy --dry-run` from that tarball in a
 * fresh app. Builds dist/ first.
 *
 * Usage: `npm run size` (`-- --check` only prints, README untouched)
 */
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../test/dev/server.ts";
import {
  bundleWorker,
  createApp,
  locked,
  packTickwork,
  readmeFiles,
  tempDir,
  writeFiles,
} from "../test/support/consumer-app.ts";

const check = process.argv.includes("--check");
execFileSync("npm", ["run", "build", "--silent"], { cwd: ROOT, stdio: "inherit" });

const work = tempDir("size");
try {
  const packed = await packTickwork(work);
  const app = join(work, "app");
  await createApp(app, [
    packed.tarball,
    ...["hono", "zod", "@upstash/redis", "@upstash/qstash"].map(locked),
  ]);
  const files = readmeFiles();
  writeFiles(app, {
    "wrangler.toml": files["wrangler.toml"]!,
    "src/worker.ts": files["src/worker.ts"]!,
    "src/tickwork/handlers.ts": files["src/tickwork/handlers.ts"]!,
  });
  const worker = await bundleWorker(app);
  const wrangler = JSON.parse(
    readFileSync(join(ROOT, "node_modules", "wrangler", "package.json"), "utf8"),
  ).version;

  const figures = {
    tarball:
      `**${packed.files.length} files, ${(packed.size / 1024).toFixed(0)} kB packed, ` +
      `${(packed.unpackedSize / 1024).toFixed(0)} kB unpacked**`,
    worker:
      `**${worker.kib.toFixed(0)} KiB, ${worker.gzipKib.toFixed(0)} KiB gzipped** ` +
      `(wrangler ${wrangler})`,
  };
  console.log(`tarball: ${figures.tarball}\nworker:  ${figures.worker}`);
  if (!check) {
    const path = join(ROOT, "README.md");
    let readme = readFileSync(path, "utf8");
    for (const [name, text] of Object.entries(figures)) {
      const marker = new RegExp(`(<!-- size:${name} -->)[\\s\\S]*?(<!-- /size:${name} -->)`);
      if (!marker.test(readme)) throw new Error(`README.md has no <!-- size:${name} --> marker`);
      readme = readme.replace(marker, `$1${text}$2`);
    }
    writeFileSync(path, readme);
    console.log("README.md updated");
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
