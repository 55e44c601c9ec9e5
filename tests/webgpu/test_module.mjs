// The ES module `zyntax compile --backend webgpu --emit js` writes, used as a
// JavaScript program would: tests/webgpu/module_test.zynml's kernels called
// with typed arrays on a WebGPU device in node (Dawn), their results
// compared with the same arithmetic done here; wrong shapes and failed
// checks are errors that say what is wrong.
//
//   node tests/webgpu/test_module.mjs ZYNTAX_BINARY
// Exit 77 (skipped) without a node module `webgpu` or an adapter.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const { device, choice } = await import('./dawn_device.mjs');

const out = mkdtempSync(join(tmpdir(), 'zyntax-module-'));
let failures = 0;
const expect = (what, ok, detail = '') => {
  if (!ok) {
    ++failures;
    console.log(`FAIL ${what} ${detail}`);
  } else {
    console.log(`ok   ${what}`);
  }
};
const close = (got, want, tol = 1e-5) => got.length === want.length && Array.from(got).every((g, i) => Math.abs(g - want[i]) <= tol * (1 + Math.abs(want[i])));

try {
  execFileSync(process.argv[2], ['compile', join(here, 'module_test.zynml'), '--backend', 'webgpu', '--emit', 'js', '-o', out], { stdio: 'pipe' });
  const mod = await import(join(out, 'module_test.mjs'));
  expect('the module exports every kernel', ['scaled_sum', 'row_sums', 'arg_max', 'softmax_rows', 'shifted_read', 'unread_input'].every((k) => typeof mod[k] === 'function'));
  const doubled = await mod.unread_input(device, { mask: { data: new Float32Array(6), shape: [2, 3] }, v: Float32Array.from([1, -2, 3]) });
  expect('an input the kernel does not read takes any shape', close(doubled.data, [2, -4, 6], 0), String(Array.from(doubled.data)));

  const r = 5, c = 7;
  const m = Float32Array.from({ length: r * c }, (_, i) => Math.sin(i) * 3);
  const v = Float32Array.from({ length: c }, (_, j) => j - 2.5);
  const scaled = await mod.scaled_sum(device, { m: { data: m, shape: [r, c] }, v, s: 1.5 });
  expect('scaled_sum: shape', scaled.shape.join() === `${r},${c}`, JSON.stringify(scaled.shape));
  expect('scaled_sum: values', close(scaled.data, Array.from(m, (x, i) => Math.fround(Math.fround(x * 1.5) + v[i % c]))));

  // An input already on the device, as a GPUBuffer.
  const onDevice = device.createBuffer({ size: m.byteLength, usage: GPUBufferUsage.STORAGE, mappedAtCreation: true });
  new Float32Array(onDevice.getMappedRange()).set(m);
  onDevice.unmap();
  const fromBuffer = await mod.scaled_sum(device, { m: { data: onDevice, shape: [r, c] }, v, s: 1.5 });
  expect('a GPUBuffer argument', close(fromBuffer.data, scaled.data, 0));
  onDevice.destroy();

  const sums = await mod.row_sums(device, { m: { data: m, shape: [r, c] } });
  const want = Array.from({ length: r }, (_, i) => m.slice(i * c, (i + 1) * c).reduce((a, b) => a + b, 0));
  expect('row_sums', sums.shape.join() === `${r}` && close(sums.data, want, 1e-5), `${Array.from(sums.data)} vs ${want}`);

  const x = Float32Array.from([0.5, -2, 7.25, 7.25, 3]);
  const best = await mod.arg_max(device, { x });
  expect('arg_max: the first of equal maxima, as i64', best.data instanceof BigInt64Array && best.data[0] === 2n, String(best.data));

  const soft = await mod.softmax_rows(device, { x: { data: m, shape: [r, c] } });
  const wantSoft = [];
  for (let i = 0; i < r; ++i) {
    const row = Array.from(m.slice(i * c, (i + 1) * c));
    const mx = Math.max(...row), e = row.map((y) => Math.exp(y - mx)), s = e.reduce((a, b) => a + b, 0);
    wantSoft.push(...e.map((y) => y / s));
  }
  expect('softmax_rows', close(soft.data, wantSoft, 1e-5));

  let error = '';
  try {
    await mod.scaled_sum(device, { m: { data: m, shape: [r, c] }, v: new Float32Array(c + 1), s: 1 });
  } catch (e) {
    error = e.message;
  }
  expect('a wrong shape names the argument and both shapes', /argument v has shape \[8\], the kernel wants \[7\]/.test(error), error);
  error = '';
  try {
    await mod.scaled_sum(device, { m: { data: new Int32Array(r * c), shape: [r, c] }, v, s: 1 });
  } catch (e) {
    error = e.message;
  }
  expect('a typed array of another type is refused', /argument m is a Int32Array, the kernel wants f32/.test(error), error);
  error = '';
  try {
    await mod.scaled_sum(device, { m: { data: m, shape: [r, c] }, v: Float64Array.from(v), s: 1 });
  } catch (e) {
    error = e.message;
  }
  expect('a Float64Array for f32 is a type mismatch, not a byte count', /argument v is a Float64Array, the kernel wants f32 \(a Float32Array\)/.test(error), error);

  // A device made by the runtime holds its Dawn instance: with nothing else
  // referencing the instance, and the garbage collector run, kernels still run.
  const runtime = await import(join(out, 'zyntax_webgpu.mjs'));
  let own = await runtime.requestDevice(choice);
  const doubled2 = Array.from(m, (x, i) => Math.fround(Math.fround(x * 2) + v[i % c]));
  for (let i = 0; i < 12; ++i) {
    globalThis.gc?.();
    await new Promise((resolve) => setTimeout(resolve, 5));
    const got = await mod.scaled_sum(own, { m: { data: m, shape: [r, c] }, v, s: 2 });
    if (!close(got.data, doubled2)) throw new Error(`call ${i} on the runtime's own device: ${Array.from(got.data)}`);
  }
  expect('a device from requestDevice keeps its instance alive (12 calls, collected between)', true);
  own = null;
  error = '';
  try {
    await mod.shifted_read(device, { x: Int32Array.from([1, 2, 3]) });
  } catch (e) {
    error = e.message;
  }
  expect('an index out of bounds is a KernelError naming the read', /index out of bounds reading x/.test(error), error);
} catch (e) {
  expect('the module runs', false, e.stack ?? String(e));
} finally {
  rmSync(out, { recursive: true, force: true });
  device.destroy();
}
console.log(failures ? `${failures} failed` : 'all passed');
process.exit(failures ? 1 : 0);
