// Stored text is data, never markup: a goal name, parameter names and values, and a program's error that
// hold HTML (a command target's space allows any string) show as text in the report, in every chart
// tooltip, and on the dashboard, whose index also names a database file holding markup. Each tooltip is
// shown in turn; no element or script from the stored text may appear.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { autotune, browser, check, openPage, startAutotune, tempdir } from "./browser_support.mjs";

const dir = tempdir();
const db = join(dir, "<img src=x onerror=window.__xss=3>.db");
writeFileSync(join(dir, "measure.py"),
  "import sys\nv = sys.argv[1]\n" +
  "if v.startswith('<'):\n    sys.stderr.write('failed: <img src=x onerror=window.__xss=1> <!--<script>\\n'); sys.exit(1)\n" +
  "print('{\"latency_s\": %g}' % (1e-3 * (2 if v == 'b' else 1) * (1.1 if sys.argv[2] == '2' else 1)))\n");
const goal = join(dir, "markup.yaml");
writeFileSync(goal, `name: "<!--<script> markup"
target: {kind: command, argv: [python3, ${join(dir, "measure.py")}, "{x}", "{p}"]}
search:
  space:
    x: ["<img src=x onerror=window.__xss=1>", "a", "b"]
    "<b onmouseover=window.__xss=2>p</b>": [1, 2]
    p: [1, 2]
`);
const sweep = JSON.parse(autotune(["sweep", goal, "--json"], db));
const chrome = await browser();

// Shows every tooltip of every chart on the page, then reports what markup and script the stored text made.
async function hoverAll(page) {
  const shown = await page.evaluate(async () => {
    const texts = [];
    for (const chart of Object.values(window.__autotuneCharts)) {
      const series = chart.getOption().series || [];
      for (let si = 0; si < series.length; ++si)
        for (let di = 0; di < (series[si].data || []).length; ++di) {
          chart.dispatchAction({ type: "showTip", seriesIndex: si, dataIndex: di });
          await new Promise((r) => setTimeout(r, 20));
          const tip = [...chart.getDom().querySelectorAll("div")].find((d) => d.style.position === "absolute" &&
                                                                          d.style.display !== "none" && d.innerHTML);
          if (tip) texts.push(tip.textContent);
        }
    }
    return texts;
  });
  const injected = await page.evaluate(() => ({
    elements: document.querySelectorAll("img, b[onmouseover]").length,
    xss: window.__xss,
  }));
  return { shown, injected };
}

try {
  const html = join(dir, "markup.html");
  autotune(["report", String(sweep.run_id), "-o", html], db);
  for (const url of ["file://" + html]) {
    const { page, errors } = await openPage(chrome, url);
    const status = await page.evaluate(() => window.__autotuneRender);
    check(errors.length === 0 && status.errors.length === 0, `script errors: ${errors} ${status.errors}`);
    check(status.charts.convergence === sweep.measured, `the page shows ${status.charts.convergence} of ${sweep.measured} trials`);
    const heading = await page.locator("section.run h2").first().textContent();
    check(heading.includes("<!--<script> markup"), `the goal name reads ${JSON.stringify(heading)}`);
    const { shown, injected } = await hoverAll(page);
    check(injected.elements === 0 && injected.xss === undefined, `markup became page content: ${JSON.stringify(injected)}`);
    check(shown.some((t) => t.includes("failed: <img src=x onerror=window.__xss=1>")), `no tooltip shows the error as text: ${shown.slice(0, 5)}`);
    check(shown.some((t) => t.includes("x=<img src=x onerror=window.__xss=1>")), "no tooltip shows the value as text");
    check(shown.some((t) => t.includes("<b onmouseover=window.__xss=2>p</b>")), "no tooltip shows the parameter name as text");
  }

  // The dashboard: its index names the database (markup in the file name), and the run's page as above.
  const server = startAutotune(["serve", "--port", "0"], db);
  try {
    const url = await new Promise((resolve, reject) => {
      let text = "";
      server.stdout.on("data", (chunk) => {
        text += chunk;
        const m = text.match(/at (http:\/\/\S+)/);
        if (m) resolve(m[1]);
      });
      server.on("exit", (code) => reject(new Error(`serve exited ${code}`)));
    });
    const home = await chrome.newPage();
    await home.goto(url);
    await home.waitForFunction(() => document.querySelectorAll("#runs tbody tr").length >= 1, null, { timeout: 30_000 });
    const index = await home.evaluate(() => ({ title: document.title, subtitle: document.getElementById("subtitle").textContent,
                                               elements: document.querySelectorAll("img").length, xss: window.__xss,
                                               goal: document.querySelector("#runs tbody tr td:nth-child(2)").textContent }));
    check(index.elements === 0 && index.xss === undefined, `the index made markup of the database name: ${JSON.stringify(index)}`);
    check(index.subtitle.includes("<img src=x onerror=window.__xss=3>.db") && index.title.includes("<img src=x"),
          `the index names the database as ${JSON.stringify(index.subtitle)}`);
    check(index.goal.startsWith("<!--<script> markup"), `the index names the goal ${JSON.stringify(index.goal)}`);
    const { page, errors } = await openPage(chrome, `${url}run/${sweep.run_id}`);
    check(errors.length === 0, `dashboard script errors: ${errors}`);
    const { shown, injected } = await hoverAll(page);
    check(injected.elements === 0 && injected.xss === undefined, `markup became dashboard content: ${JSON.stringify(injected)}`);
    check(shown.some((t) => t.includes("failed: <img src=x onerror=window.__xss=1>")), "the dashboard's tooltips lack the error");
  } finally {
    server.kill();
  }
} finally {
  await chrome.close();
}
console.log("ok");
