// Shared by the browser tests: headless Chromium (Debian's) driven by playwright-core, and the real
// autotune binary.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
export const SOURCE = process.env.AUTOTUNE_SOURCE_DIR || join(import.meta.dirname, "..", "..");
export const BIN = process.env.AUTOTUNE_BIN || "autotune";
const { chromium } = require(join(SOURCE, "web", "node_modules", "playwright-core"));

export function fail(message) {
  console.log("FAIL:", message);
  process.exit(1);
}

export function check(condition, message) {
  if (!condition) fail(message);
}

export function autotune(args, db) {
  const env = { ...process.env };
  delete env.AUTOTUNE_DB;
  const out = spawnSync(BIN, [...args, "--db", db], { encoding: "utf8", env, timeout: 600_000 });
  check(out.status === 0, `autotune ${args.join(" ")} exited ${out.status}: ${out.stderr}`);
  return out.stdout;
}

export function startAutotune(args, db) {
  const env = { ...process.env };
  delete env.AUTOTUNE_DB;
  return spawn(BIN, [...args, "--db", db], { env, stdio: ["ignore", "pipe", "pipe"] });
}

export function tempdir() {
  const dir = mkdtempSync(join(tmpdir(), "autotune-browser-"));
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// Chromium as the machine's other tests run it: no sandbox as root, no background networking (the
// machine has no network beyond package archives).
export async function browser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--no-first-run"],
  });
}

// Opens `url`, collecting script errors, and waits until the page published its render status.
export async function openPage(context, url) {
  const page = await context.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  await page.goto(url);
  await page.waitForFunction(() => window.__autotuneRender !== undefined, null, { timeout: 30_000 });
  return { page, errors };
}
