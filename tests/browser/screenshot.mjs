// Makes the README's picture of a report: a real run of the attention goal on trn2, its report opened in
// headless Chromium, the top of the page saved as PNG.
//   AUTOTUNE_BIN=build/autotune node tests/browser/screenshot.mjs docs/images/report.png
import { join } from "node:path";
import { SOURCE, autotune, browser, openPage, tempdir } from "./browser_support.mjs";

const output = process.argv[2] || "report.png";
const dir = tempdir();
const db = join(dir, "runs.db");
const run = JSON.parse(autotune(["run", join(SOURCE, "configs", "goals", "qwen3-attention-16k-trn2.yaml"), "--json"], db));
const html = join(dir, "report.html");
autotune(["report", String(run.run_id), "-o", html], db);
const chrome = await browser();
const { page } = await openPage(chrome, "file://" + html);
await page.setViewportSize({ width: 1400, height: 2250 });
await page.waitForTimeout(500);
await page.screenshot({ path: output, clip: { x: 0, y: 0, width: 1400, height: 2250 } });
await chrome.close();
console.log(`wrote ${output}: run ${run.run_id}, ${run.evaluations} trials`);
