// examples/web in a browser: the transformer block's kernels compiled with
// `--emit js --sizes-from-run`, the page served over HTTP and opened in
// headless Chromium (WebGPU on its software adapter), driven by
// puppeteer-core; the block's output compared with NumPy's
// (tests/webgpu/transformer_reference.py) on the same random inputs.
//
//   node tests/webgpu/test_page.mjs ZYNTAX_BINARY
// Exit 77 (skipped) without Chromium, puppeteer-core or a WebGPU adapter.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, extname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const web = join(root, 'examples', 'web');
const chromium = process.env.ZYNTAX_CHROMIUM ?? '/usr/bin/chromium';
if (!existsSync(chromium)) {
  console.log(`skipped: no Chromium at ${chromium}`);
  process.exit(77);
}
let puppeteer;
try {
  puppeteer = (await import(createRequire(join(root, 'js', 'package.json')).resolve('puppeteer-core'))).default;
} catch (e) {
  console.log(`skipped: no node module puppeteer-core (npm install in js/): ${e.message}`);
  process.exit(77);
}

const generated = mkdtempSync(join(tmpdir(), 'zyntax-web-'));
const types = { '.html': 'text/html', '.mjs': 'text/javascript', '.js': 'text/javascript' };
const server = createServer((req, res) => {
  const path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname));
  const file = path.startsWith('/generated/') ? join(generated, path.slice('/generated/'.length)) : join(web, path === '/' ? 'index.html' : path);
  try {
    const body = readFileSync(file);
    res.writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream' });
    res.end(body);
  } catch {
    res.writeHead(404);
    res.end();
  }
});
let browser = null, status = 0;
try {
  execFileSync(process.argv[2], ['compile', join(root, 'examples', 'transformer_block.zynml'), '--emit', 'js', '--sizes-from-run', '-o', generated],
               { stdio: 'pipe' });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  browser = await puppeteer.launch({ executablePath: chromium, headless: true, args: ['--no-sandbox', '--enable-unsafe-webgpu'] });
  const page = await browser.newPage();
  page.on('console', (m) => console.log(`page: ${m.text()}`));
  await page.goto(`http://localhost:${server.address().port}/index.html?driven`);
  await page.waitForFunction(() => typeof window.runTransformerBlock === 'function');
  if (!(await page.evaluate(async () => !!(navigator.gpu && (await navigator.gpu.requestAdapter()))))) {
    console.log('skipped: the browser has no WebGPU adapter');
    status = 77;
  } else {
    // Inputs from a fixed seed (a xorshift generator), as the example makes them.
    const { sizes } = await import(join(web, 'transformer_block.mjs'));
    const { batch, seq, hidden, ffn } = sizes;
    let state = 0x9e3779b9;
    const uniform = () => ((state ^= state << 13), (state ^= state >>> 17), (state ^= state << 5), (state >>> 0) / 2 ** 32);
    const randn = (n, scale = 1) => Array.from({ length: n }, () => scale * Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform()));
    const s = 1 / Math.sqrt(hidden);
    const w = {
      qkv_proj: randn(hidden * 3 * hidden, s), out_proj: randn(hidden * hidden, s),
      ln1_weight: randn(hidden, 0.1).map((v) => 1 + v), ln1_bias: randn(hidden, 0.1),
      ffn_up: randn(hidden * ffn, s), ffn_down: randn(ffn * hidden, 1 / Math.sqrt(ffn)),
      ln2_weight: randn(hidden, 0.1).map((v) => 1 + v), ln2_bias: randn(hidden, 0.1),
    };
    const x = randn(batch * seq * hidden);
    const got = await page.evaluate((x, w) => window.runTransformerBlock(x, w), x, w);
    const want = JSON.parse(execFileSync('/usr/bin/python3', [join(here, 'transformer_reference.py')],
                                        { input: JSON.stringify({ x, w, sizes }), maxBuffer: 1 << 26 }).toString());
    let worst = 0, at = 0;
    for (let i = 0; i < want.length; ++i) {
      const e = Math.abs(got[i] - want[i]) / (1e-3 + Math.abs(want[i]));
      if (e > worst) (worst = e), (at = i);
    }
    const ok = got.length === want.length && worst <= 1e-3;
    console.log(`${ok ? 'ok  ' : 'FAIL'} the transformer block in the browser against NumPy: ${got.length} values, worst relative error ${worst.toExponential(2)} ` +
                `(element ${at}: ${got[at]} vs ${want[at]})`);
    status = ok ? 0 : 1;
  }
} catch (e) {
  console.log(`FAIL ${e.stack ?? e}`);
  status = 1;
} finally {
  if (browser) await browser.close();
  server.close();
  rmSync(generated, { recursive: true, force: true });
}
process.exit(status);
