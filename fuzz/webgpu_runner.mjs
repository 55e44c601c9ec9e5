// The WebGPU side of fuzz/differential.py: one node process (Dawn, from
// npm's `webgpu` in js/) that runs programs' kernels as a JavaScript user
// would, through the ES module `zyntax compile --backend webgpu --emit js`
// writes. Requests come one per line on stdin:
//
//   {"module": "/dir/program.mjs", "dir": "/dir", "kernels": ["k0", "k1", "red"]}
//
// Each kernel is called in order; an argument named NAME is the array
// NAME.npy in `dir` (a 0-d array for a scalar), or the result of an earlier
// kernel of that name; a size that is no input's axis likewise. Results go to dir/webgpu/NAME.npy. One line answers:
// {"ok": true} or {"error": "the first message"}. A first line,
// {"ready": true}, says the device is open.
// Exits 77 (skipped) without the module `webgpu` or an adapter.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

const { device } = await import('../tests/webgpu/dawn_device.mjs');

const kTypes = {
  '<f4': ['f32', Float32Array], '<f8': ['f64', Float64Array], '<i4': ['i32', Int32Array], '<i8': ['i64', BigInt64Array],
  '|b1': ['bool', Uint8Array], '<u4': ['u32', Uint32Array],
};
const descrOf = (dtype) => Object.keys(kTypes).find((k) => kTypes[k][0] === dtype);

// NumPy's .npy format, version 1 and 2, C order, little-endian.
function readNpy(file) {
  const b = readFileSync(file);
  const major = b[6];
  const headerLen = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = b.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: Fortran order`);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  if (!kTypes[descr]) throw new Error(`${file}: dtype ${descr}`);
  const [, Array_] = kTypes[descr];
  const body = b.subarray(start + headerLen);
  const data = new Array_(body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength));
  return { data, shape };
}

function writeNpy(file, { data, shape }, dtype) {
  const descr = descrOf(dtype);
  if (!descr) throw new Error(`cannot save a ${dtype} result`);
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'), Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
}

async function run(request) {
  const mod = await import(pathToFileURL(request.module).href);
  const results = {};
  const out = join(request.dir, 'webgpu');
  mkdirSync(out, { recursive: true });
  for (const name of request.kernels) {
    const plan = mod.kernels[name];
    if (!plan) break;  // not written for WebGPU (the compiler said why): nor what follows
    const args = {};
    for (const p of plan.kernel.params) {
      if (p.role === 'output') continue;
      const file = join(request.dir, `${p.name}.npy`);
      const value = results[p.name] ?? (existsSync(file) ? readNpy(file) : undefined);
      if (value === undefined) throw new Error(`${name}: no value for ${p.name}`);
      if (p.role === 'scalar') args[p.name] = typeof value.data[0] === 'bigint' ? Number(value.data[0]) : value.data[0];
      else args[p.name] = value;
    }
    // Host integers a kernel reads as sizes are arguments too.
    for (const size of plan.sizes) {
      if (size.input !== undefined) continue;
      const file = join(request.dir, `${size.name}.npy`);
      const value = results[size.name] ?? (existsSync(file) ? readNpy(file) : undefined);
      if (value === undefined) throw new Error(`${name}: no value for the size ${size.name}`);
      args[size.name] = Number(value.data[0]);
    }
    const result = await mod[name](device, args);
    results[name] = result;
    writeNpy(join(out, `${name}.npy`), result, plan.kernel.params.at(-1).dtype);
  }
}

process.stdout.write('{"ready": true}\n');
for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  let answer;
  try {
    await run(JSON.parse(line));
    answer = { ok: true };
  } catch (e) {
    answer = { error: String(e && e.message ? e.message : e).split('\n')[0] };
  }
  process.stdout.write(JSON.stringify(answer) + '\n');
}
