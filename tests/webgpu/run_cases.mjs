// Runs the WebGPU parity cases (zyntax_webgpu_cases' lines) on a WebGPU
// adapter in node (Dawn, from the npm package `webgpu` in js/), through the
// JavaScript runtime: each kernel's WGSL must pass Dawn's validation, run,
// and give the reference executor's output (within 1e-4 relative + 1e-5
// for approximate cases; NaN where NaN), or fail its check where the
// reference reports an error.
//
//   node tests/webgpu/run_cases.mjs cases.jsonl
// Without a node module `webgpu` or an adapter: exit 77 (skipped). The
// adapter: any Dawn finds, else OpenGL ES on Mesa's llvmpipe (EGL without a
// display) in compatibility mode.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const { runKernel, KernelError, hostValue } = await import(join(root, 'js', 'src', 'runtime.mjs'));

const { adapter: found, device } = await import('./dawn_device.mjs');
console.log(`adapter: ${found.info.vendor} ${found.info.description || found.info.device} (${found.info.architecture})`);

const decode = (b64) => new Uint8Array(Buffer.from(b64, 'base64'));
const view = (bytes, dtype) => {
  const b = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
  switch (dtype) {
    case 'f32': return new Float32Array(b);
    case 'i32': return new Int32Array(b);
    case 'u32': return new Uint32Array(b);
    case 'i16': return new Int16Array(b);
    case 'u16': return new Uint16Array(b);
    case 'i8': return new Int8Array(b);
    default: return new Uint8Array(b);
  }
};

function agree(got, want, dtype, approximate) {
  const g = view(got, dtype), w = view(want, dtype);
  if (g.length !== w.length) return `length ${g.length} vs ${w.length}`;
  for (let i = 0; i < g.length; ++i) {
    const x = g[i], y = w[i];
    if (Object.is(x, y) || x === y || (Number.isNaN(x) && Number.isNaN(y))) continue;
    if (approximate && Number.isFinite(x) && Number.isFinite(y) && Math.abs(x - y) <= 1e-4 * Math.abs(y) + 1e-5) continue;
    return `element ${i}: ${x} vs ${y}`;
  }
  return '';
}

// An f64 the runtime computed for a kernel (its scalars' expressions):
// the reference's bit for bit where `exact`, else within 2 ulp of f64.
function host_value_wrong(got, want, exact) {
  if (Object.is(got, want) || (Number.isNaN(got) && Number.isNaN(want))) return '';
  if (!exact && Number.isFinite(got) && Number.isFinite(want) && Math.sign(got) === Math.sign(want)) {
    const bits = (v) => new BigInt64Array(new Float64Array([Math.abs(v)]).buffer)[0];
    const d = bits(got) - bits(want);
    if (d <= 2n && d >= -2n) return '';
  }
  return `${got}, the reference ${want}`;
}

// The f32 math cases: within `ulp` (plus `growth` per unit of the result's
// |log2|) of the reference; where the reference is below the normal range
// (not zero), anything there, flushed to either zero included
// (tests/unit/f32_math_accuracy.hpp).
function within_ulp(got, want, ulp, growth) {
  const g = view(got, 'f32'), w = view(want, 'f32');
  const gi = new Int32Array(g.buffer, g.byteOffset, g.length), wi = new Int32Array(w.buffer, w.byteOffset, w.length);
  const smallest_normal = 1.1754943508222875e-38;
  for (let i = 0; i < g.length; ++i) {
    const x = g[i], y = w[i];
    if (Number.isNaN(x) || Number.isNaN(y)) { if (Number.isNaN(x) && Number.isNaN(y)) continue; return `element ${i}: ${x} vs ${y}`; }
    if (!Number.isFinite(x) || !Number.isFinite(y)) { if (x === y) continue; return `element ${i}: ${x} vs ${y}`; }
    if (y !== 0 && Math.abs(x) < smallest_normal && Math.abs(y) < smallest_normal) continue;
    if ((gi[i] < 0) !== (wi[i] < 0)) return `element ${i}: ${x} vs ${y} (signs differ)`;
    const off = Math.abs(gi[i] - wi[i]);
    const bound = ulp + growth * (y === 0 ? 0 : Math.abs(Math.log2(Math.abs(y))));
    if (off > bound) return `element ${i}: ${x} vs ${y} (${off} ulp, bound ${Math.floor(bound)})`;
  }
  return '';
}

// Where the reference's 64-bit integers reach past 32 bits and come back
// (i64(-inf) saturates to -2^63, then % 4 brings it back), WebGPU fails the
// run saying so instead; these cases must fail that way.
const k32BitLimits = new Set(['scatter_max variant 2', 'scatter_min_bf16 variant 2']);

const lines = readFileSync(process.argv[2], 'utf8').split('\n').filter((l) => l.trim());
let passed = 0, failed = 0;
const unsupported = new Map();
for (const l of lines) {
  const c = JSON.parse(l);
  const what = `${c.case} variant ${c.variant}`;
  if (c.unsupported) {
    unsupported.set(c.case, c.unsupported);
    continue;
  }
  if (c.host) {
    const wrong = host_value_wrong(hostValue(c.host, c.scalars.map(Number)), Number(c.want), c.exact);
    if (wrong) {
      ++failed;
      console.log(`FAIL ${what}: (${c.scalars.join(', ')}): ${wrong}`);
    } else {
      ++passed;
    }
    continue;
  }
  try {
    const tensors = c.tensors.map((t) => (typeof t === 'number' ? t : decode(t)));
    let got, error = '';
    try {
      got = await runKernel(device, c.kernel, { tensors, dims: c.dims });
    } catch (e) {
      if (!(e instanceof KernelError) || /does not compile/.test(e.message)) throw e;
      error = e.message;
    }
    let wrong = '';
    if (c.error !== undefined) wrong = error ? '' : `the reference reports "${c.error}", WebGPU ran`;
    else if (k32BitLimits.has(what)) wrong = /past 32 bits/.test(error) ? '' : `expected to fail past 32 bits, ${error ? 'failed: ' + error : 'ran'}`;
    else if (error) wrong = `failed: ${error}`;
    else if (c.ulp !== undefined) wrong = within_ulp(got, decode(c.expected.bytes), c.ulp, c.growth);
    else wrong = agree(got, decode(c.expected.bytes), c.expected.dtype, c.approximate);
    if (wrong) {
      ++failed;
      console.log(`FAIL ${what}: ${wrong}`);
    } else {
      ++passed;
    }
  } catch (e) {
    ++failed;
    console.log(`FAIL ${what}: ${e.message}`);
  }
}
for (const [name, why] of unsupported) console.log(`not written for WebGPU yet: ${name} (${why})`);
console.log(`${passed} passed, ${failed} failed; ${unsupported.size} kinds not written for WebGPU yet`);
device.destroy();
process.exit(failed ? 1 : 0);
