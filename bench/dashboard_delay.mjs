// The live dashboard's update delay: how long after a trial is committed (seen by polling the server's
// JSON every 20 ms) it appears on an open run page in headless Chromium (the page is polled every 20 ms
// too). A sweep of a command target that takes 0.3 s per candidate provides the trials.
//   AUTOTUNE_BIN=build/autotune node bench/dashboard_delay.mjs
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { browser, openPage, startAutotune, tempdir } from "../tests/browser/browser_support.mjs";

const dir = tempdir();
const db = join(dir, "runs.db");
writeFileSync(join(dir, "slow.py"), 'import sys, time\ntime.sleep(0.3)\nprint(\'{"latency_s": %g}\' % (1e-3 * int(sys.argv[1])))\n');
const goal = join(dir, "slow.yaml");
writeFileSync(goal, `name: slow\ntarget: {kind: command, argv: [python3, slow.py, "{x}"]}\nsearch:\n  space: {x: [${Array.from({ length: 60 }, (_, i) => i + 1).join(", ")}]}\n`);
const sweep = startAutotune(["sweep", goal], db);
while (!existsSync(db)) await new Promise((res) => setTimeout(res, 20));
const server = startAutotune(["serve", "--port", "0"], db);
const url = await new Promise((resolve) => {
  let text = "";
  server.stdout.on("data", (c) => { text += c; const m = text.match(/at (http:\/\/\S+)/); if (m) resolve(m[1]); });
});
const chrome = await browser();
const delays = [];
try {
  let page;
  while (!page) {
    const r = await fetch(`${url}api/run/1/trials?after=0`).catch(() => null);
    if (r && r.ok && (await r.json()).points.length > 0) ({ page } = await openPage(chrome, `${url}run/1`));
    else await new Promise((res) => setTimeout(res, 50));
  }
  let done = false;
  sweep.on("exit", () => { done = true; });
  const committed = new Map();  // trial count -> when the server first had it
  let served = 0, shown = (await page.evaluate(() => window.__autotuneRender.charts.convergence));
  while (!done || shown < served) {
    const now = Date.now();
    const update = await (await fetch(`${url}api/run/1/trials?after=0`)).json();
    if (update.points.length > served) {
      for (let n = served + 1; n <= update.points.length; ++n) committed.set(n, now);
      served = update.points.length;
    }
    const count = await page.evaluate(() => window.__autotuneRender.charts.convergence);
    for (let n = shown + 1; n <= count; ++n) if (committed.has(n)) delays.push(Date.now() - committed.get(n));
    shown = Math.max(shown, count);
    await new Promise((res) => setTimeout(res, 20));
  }
} finally {
  sweep.kill();
  server.kill();
  await chrome.close();
}
delays.sort((a, b) => a - b);
const at = (q) => delays[Math.min(delays.length - 1, Math.floor(q * delays.length))];
console.log(`dashboard update delay over ${delays.length} trials: median ${at(0.5)} ms, 90th percentile ${at(0.9)} ms, max ${delays[delays.length - 1]} ms (the page asks every 1000 ms)`);
process.exit(0);
