// Runs a kernel compiled for WebGPU (zyntax compile --backend webgpu) on a
// GPUDevice: its WGSL made a pipeline once, its tensors in storage buffers
// of 32-bit words, its scalars and dimensions in one uniform buffer, its
// status word read back with the output. A failed check (an index out of
// bounds, a division by zero, an index past 32 bits) throws a KernelError
// saying which.
//
// A kernel description is what the compiler writes for each kernel:
//   { name, wgsl, workgroupSize, params: [{ name, role, dtype }],
//     statusBinding, uniformBinding, uniformBytes,
//     uniforms: [{ source: "scalar" | "dim" | "host", index, as, offset, expr }],
//     sites: ["index out of bounds reading x", ...],
//     reduce: null | { op, arg, identity (one element, base64) | bestDtype, bestBinding, hasBinding } }
// Tensors travel as their bytes (any TypedArray or ArrayBuffer), in the
// element layout the compiler's dtypes have (bool and 8-bit types one byte,
// f32/i32/u32 four, little-endian).

export class KernelError extends Error {}

// An f64 expression of the kernel's scalars (a uniform of source "host"):
// computed here in f64, as the compiler's reference computes it, since WGSL
// would compute it in f32. Nodes: { op: "param", index }, { op: "const",
// value } (a number, "inf", "-inf" or "nan"), { op, args }.
const kHostOps = {
  add: (a, b) => a + b, sub: (a, b) => a - b, mul: (a, b) => a * b, div: (a, b) => a / b,
  mod: (a, b) => a % b,  // C's fmod: the sign of the dividend, exact
  min: (a, b) => Math.min(a, b), max: (a, b) => Math.max(a, b),  // NaN wins; min(-0, 0) is -0
  clamp: (a, lo, hi) => Math.min(Math.max(a, lo), hi),
  neg: (a) => -a, abs: Math.abs, floor: Math.floor, ceil: Math.ceil, trunc: Math.trunc, sqrt: Math.sqrt,
  rsqrt: (a) => 1 / Math.sqrt(a),
  round: (a) => (Math.abs(a % 1) === 0.5 ? 2 * Math.round(a / 2) : Math.round(a)),  // half to even
  sign: (a) => (a > 0 ? 1 : a < 0 ? -1 : a === 0 ? 0 : a),  // sign(-0) is 0
  relu: (a) => (a > 0 || a !== a ? a : 0),
  sin: Math.sin, cos: Math.cos, tan: Math.tan, asin: Math.asin, acos: Math.acos, atan: Math.atan,
  sinh: Math.sinh, cosh: Math.cosh, tanh: Math.tanh, exp: Math.exp, exp2: (a) => 2 ** a,
  log: Math.log, log2: Math.log2, log10: Math.log10, atan2: Math.atan2,
  // C's pow where JavaScript's differs: 1 to any power, and -1 to ±inf, are 1.
  pow: (a, b) => (a === 1 || (a === -1 && Math.abs(b) === Infinity) ? 1 : a ** b),
  fma: exactFma,
};

// a * b + c rounded once: the exact sum in BigInt, then rounded to
// nearest even (to the subnormals' spacing where the result is that small).
function exactFma(a, b, c) {
  if (!Number.isFinite(a) || !Number.isFinite(b) || a === 0 || b === 0) return a * b + c;  // the product exact (or not finite)
  if (!Number.isFinite(c)) return c;  // a finite product, however large, does not change it
  if (c === 0) return a * b;  // rounded once; a product too small keeps its sign
  const parts = (x) => {
    const view = new DataView(new ArrayBuffer(8));
    view.setFloat64(0, x);
    const hi = view.getUint32(0), lo = view.getUint32(4);
    const biased = (hi >>> 20) & 0x7ff;
    let m = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
    if (biased) m |= 1n << 52n;
    return [x < 0 ? -m : m, (biased || 1) - 1075];
  };
  const [ma, ea] = parts(a), [mb, eb] = parts(b), [mc, ec] = parts(c);
  const e = Math.min(ea + eb, ec);
  const n = ((ma * mb) << BigInt(ea + eb - e)) + (mc << BigInt(ec - e));
  if (n === 0n) return 0;
  const negative = n < 0n;
  let m = negative ? -n : n;
  // Keep 53 bits below the leading one (fewer where the result is
  // subnormal), rounded to nearest even; then m * 2^lsb is exact.
  const lead = m.toString(2).length - 1 + e;
  if (lead > 1023) return negative ? -Infinity : Infinity;
  const lsb = Math.max(lead - 52, -1074);
  let exponent = e;
  if (lsb > e) {
    const shift = BigInt(lsb - e);
    const q = m >> shift, rest = m - (q << shift), half = 1n << (shift - 1n);
    m = rest > half || (rest === half && (q & 1n)) ? q + 1n : q;
    exponent = lsb;
  }
  // 2^exponent alone may be below the smallest subnormal: in two steps.
  const r = exponent < -900 ? Number(m) * 2 ** (exponent + 200) * 2 ** -200 : Number(m) * 2 ** exponent;
  return negative ? -r : r;
}

const kHostConsts = { inf: Infinity, '-inf': -Infinity, nan: NaN };

export function hostValue(expr, scalars) {
  if (expr.op === 'param') {
    const v = scalars[expr.index];
    if (v === undefined) throw new TypeError(`no value for scalar ${expr.index}`);
    return Number(v);
  }
  if (expr.op === 'const') return typeof expr.value === 'string' ? kHostConsts[expr.value] : expr.value;
  const f = kHostOps[expr.op];
  if (!f) throw new TypeError(`unknown host operation ${expr.op}`);
  return f(...expr.args.map((a) => hostValue(a, scalars)));
}

const kDtypeBytes = { bool: 1, i8: 1, u8: 1, i16: 2, u16: 2, f16: 2, bf16: 2, i32: 4, u32: 4, f32: 4, i64: 8, u64: 8, f64: 8 };

export function dtypeBytes(dtype) {
  const n = kDtypeBytes[dtype];
  if (!n) throw new TypeError(`unknown dtype ${dtype}`);
  return n;
}

function bytesOf(data) {
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new TypeError('a tensor is a TypedArray or an ArrayBuffer');
}

const padded = (bytes) => Math.max(4, Math.ceil(bytes / 4) * 4);
const isGpuBuffer = (x) => typeof GPUBuffer !== 'undefined' && x instanceof GPUBuffer;

// `bytes` bytes of one element (base64) repeated.
function filled(bytes, elementBase64) {
  const one = Uint8Array.from(atob(elementBase64), (c) => c.charCodeAt(0));
  const out = new Uint8Array(bytes);
  for (let i = 0; i < bytes; i += one.length) out.set(one.subarray(0, Math.min(one.length, bytes - i)), i);
  return out;
}

// What each device requestDevice made needs kept alive: in node, Dawn's
// objects die with their instance, which nothing else references once the
// device is handed out; a device whose instance was collected crashes or
// hangs at a later call. Held for as long as the device is.
const keptAlive = new WeakMap();

// A GPUDevice to run kernels on: the browser's (navigator.gpu), or in node
// Dawn's, from npm's `webgpu` (given as `webgpu`, else imported), made with
// `dawnFlags` (e.g. ['backend=opengles']); `adapterOptions` and
// `deviceDescriptor` as WebGPU takes them. The instance and adapter live as
// long as the device. Throws saying why where there is no WebGPU.
export async function requestDevice({ webgpu, dawnFlags = [], adapterOptions = {}, deviceDescriptor = {} } = {}) {
  let gpu = webgpu ? null : globalThis.navigator?.gpu;
  if (!gpu) {
    if (!webgpu) {
      try {
        webgpu = await import('webgpu');
      } catch (e) {
        throw new Error(`no WebGPU here: no navigator.gpu, and no node module 'webgpu' (npm install webgpu): ${e.message}`);
      }
    }
    Object.assign(globalThis, webgpu.globals);
    gpu = webgpu.create(dawnFlags);
  }
  const adapter = await gpu.requestAdapter(adapterOptions);
  if (!adapter) throw new Error(`no WebGPU adapter${dawnFlags.length ? ` (Dawn flags ${dawnFlags.join(' ')})` : ''}`);
  const device = await adapter.requestDevice(deviceDescriptor);
  keptAlive.set(device, { gpu, adapter });
  return device;
}

// Compiles the kernel's pipeline on `device` (once per device and kernel).
// Validation errors (with the WGSL's line:col) throw.
const pipelines = new WeakMap();
export async function pipelineFor(device, kernel) {
  let perDevice = pipelines.get(device);
  if (!perDevice) pipelines.set(device, (perDevice = new Map()));
  const cached = perDevice.get(kernel.wgsl);
  if (cached) return cached;
  device.pushErrorScope('validation');
  const module = device.createShaderModule({ code: kernel.wgsl, label: kernel.name });
  const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' }, label: kernel.name });
  const error = await device.popErrorScope();
  if (error) throw new KernelError(`kernel ${kernel.name}: the WGSL does not compile: ${error.message}`);
  perDevice.set(kernel.wgsl, pipeline);
  return pipeline;
}

// Runs `kernel` with `tensors` (the tensor params in order: inputs, as bytes
// or as GPUBuffers already holding them (STORAGE usage), then the output's
// initial contents or its byte length), `scalars` (by param
// index) and `dims` (the kernel's dimensions, in order). Returns the
// output's bytes.
export async function runKernel(device, kernel, { tensors, scalars = {}, dims = [], workgroups }) {
  const pipeline = await pipelineFor(device, kernel);
  const tensorParams = kernel.params.filter((p) => p.role !== 'scalar');
  if (tensors.length !== tensorParams.length)
    throw new TypeError(`kernel ${kernel.name} takes ${tensorParams.length} tensors, not ${tensors.length}`);
  const buffers = [];
  const release = () => buffers.forEach((b) => b.destroy());
  try {
    const bindings = [];
    let output = null, outputBytes = 0;
    const reduce = kernel.reduce;
    tensorParams.forEach((p, i) => {
      const isOutput = p.role === 'output';
      if (!isOutput && isGpuBuffer(tensors[i])) {  // already on the device: bound as it is
        const buffer = tensors[i];
        if (!(buffer.usage & GPUBufferUsage.STORAGE)) throw new TypeError(`kernel ${kernel.name}: the GPUBuffer for ${p.name} lacks STORAGE usage`);
        bindings.push({ binding: i, resource: { buffer } });
        return;
      }
      let data = typeof tensors[i] === 'number' ? new Uint8Array(tensors[i]) : bytesOf(tensors[i]);
      if (isOutput && reduce && !reduce.arg) data = filled(data.byteLength, reduce.identity);  // the accumulator starts at the identity
      if (data.byteLength / dtypeBytes(p.dtype) >= 2 ** 31)
        throw new KernelError(`kernel ${kernel.name}: ${p.name} has 2^31 elements or more (WebGPU indexes in 32 bits)`);
      const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | (isOutput ? GPUBufferUsage.COPY_SRC : 0);
      const buffer = device.createBuffer({ size: padded(data.byteLength), usage, label: p.name });
      buffers.push(buffer);
      const words = new Uint8Array(padded(data.byteLength));
      words.set(data);
      device.queue.writeBuffer(buffer, 0, words);
      bindings.push({ binding: i, resource: { buffer } });
      if (isOutput) (output = buffer), (outputBytes = data.byteLength);
    });
    // argmin/argmax: the best value of each output element and whether it has one.
    let has = null, elements = 0;
    if (reduce?.arg) {
      elements = outputBytes / dtypeBytes(tensorParams.at(-1).dtype);
      const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;
      const best = device.createBuffer({ size: padded(elements * dtypeBytes(reduce.bestDtype)), usage });
      has = device.createBuffer({ size: padded(elements * 4), usage });
      buffers.push(best, has);
      bindings.push({ binding: reduce.bestBinding, resource: { buffer: best } }, { binding: reduce.hasBinding, resource: { buffer: has } });
    }
    const status = device.createBuffer({ size: 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
    buffers.push(status);
    device.queue.writeBuffer(status, 0, new Uint32Array([0]));
    bindings.push({ binding: kernel.statusBinding, resource: { buffer: status } });
    if (kernel.uniformBinding >= 0) {
      const fields = new DataView(new ArrayBuffer(kernel.uniformBytes));
      for (const u of kernel.uniforms) {
        const value = u.source === 'dim' ? dims[u.index] : u.source === 'host' ? hostValue(u.expr, scalars) : scalars[u.index];
        if (value === undefined) throw new TypeError(`kernel ${kernel.name}: no value for ${u.source} ${u.index}`);
        if (u.as === 'f32') fields.setFloat32(u.offset, Number(value), true);
        else {
          const v = typeof value === 'boolean' ? Number(value) : Number(value);
          if (!Number.isInteger(v) || (u.as === 'i32' ? v < -(2 ** 31) || v >= 2 ** 31 : v < 0 || v >= 2 ** 32))
            throw new KernelError(`kernel ${kernel.name}: ${u.source} ${u.index} = ${value} does not fit in ${u.as} (WebGPU computes in 32 bits)`);
          if (u.as === 'i32') fields.setInt32(u.offset, v, true);
          else fields.setUint32(u.offset, v, true);
        }
      }
      const uniforms = device.createBuffer({ size: kernel.uniformBytes, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
      buffers.push(uniforms);
      device.queue.writeBuffer(uniforms, 0, fields.buffer);
      bindings.push({ binding: kernel.uniformBinding, resource: { buffer: uniforms } });
    }
    device.pushErrorScope('validation');
    const group = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: bindings });
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, group);
    // Any count of workgroups is right (the kernel's loops stride over the
    // grid); enough for the output's elements, at most 65,535.
    const count = workgroups ?? Math.min(65535, Math.max(1, Math.ceil(outputBytes / dtypeBytes(tensorParams.at(-1).dtype) / kernel.workgroupSize)));
    pass.dispatchWorkgroups(count);
    pass.end();
    const hasBytes = has ? padded(elements * 4) : 0;
    const readback = device.createBuffer({ size: padded(outputBytes) + 4 + hasBytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    buffers.push(readback);
    encoder.copyBufferToBuffer(status, 0, readback, 0, 4);
    encoder.copyBufferToBuffer(output, 0, readback, 4, padded(outputBytes));
    if (has) encoder.copyBufferToBuffer(has, 0, readback, 4 + padded(outputBytes), hasBytes);
    device.queue.submit([encoder.finish()]);
    const error = await device.popErrorScope();
    if (error) throw new KernelError(`kernel ${kernel.name}: ${error.message}`);
    await readback.mapAsync(GPUMapMode.READ);
    const bytes = new Uint8Array(readback.getMappedRange()).slice();
    readback.unmap();
    const failed = new Uint32Array(bytes.buffer, 0, 1)[0];
    if (failed) throw new KernelError(`kernel ${kernel.name}: ${kernel.sites[failed - 1] ?? 'a check failed'}`);
    if (has && new Uint32Array(bytes.buffer, 4 + padded(outputBytes), elements).includes(0))
      throw new KernelError(`kernel ${kernel.name}: ${reduce.op} of an empty range has no index`);
    const result = bytes.slice(4, 4 + outputBytes);
    // i64 elements: the kernel wrote the low words; the high ones are their sign.
    if (tensorParams.at(-1).dtype === 'i64') {
      const words = new Int32Array(result.buffer);
      for (let i = 0; i < words.length; i += 2) words[i + 1] = words[i] < 0 ? -1 : 0;
    }
    return result;
  } finally {
    release();
  }
}

// The typed array that views a dtype's elements (16-bit floats: their bits).
const kArrays = {
  f32: Float32Array, i32: Int32Array, u32: Uint32Array, i64: BigInt64Array, i16: Int16Array, u16: Uint16Array, f16: Uint16Array,
  bf16: Uint16Array, i8: Int8Array, u8: Uint8Array, bool: Uint8Array,
};
export function typedArrayOf(dtype, bytes) {
  const Array = kArrays[dtype];
  if (!Array) throw new TypeError(`no typed array holds ${dtype}`);
  return new Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / Array.BYTES_PER_ELEMENT);
}

const shapeText = (s) => `[${s.join(', ')}]`;

// Runs a kernel of a module written by `zyntax compile --backend webgpu
// --emit js` (its plan: the kernel's description, where each size comes
// from, each tensor's shape as a function of the sizes) with `args` by
// param name: tensors as typed arrays ({ data, shape } for more than one
// axis, `data` a typed array or a GPUBuffer with the elements), scalars and
// host sizes as numbers. Returns { data, shape }.
export async function launch(device, plan, args) {
  const { kernel } = plan;
  const name = kernel.name;
  const tensorParams = kernel.params.filter((p) => p.role !== 'scalar');
  const inputs = new Map();
  for (const p of tensorParams.filter((q) => q.role === 'input')) {
    const a = args[p.name];
    if (a === undefined) throw new TypeError(`${name}: no argument ${p.name}`);
    const t = ArrayBuffer.isView(a) ? { data: a, shape: [a.length] } : a;
    if (!t || !t.data || !Array.isArray(t.shape))
      throw new TypeError(`${name}: argument ${p.name} is a typed array, or { data, shape } with data a typed array or a GPUBuffer`);
    // A typed array says its element type: one of another type is refused
    // (an Int32Array read as f32 has the right size and wrong values).
    // Bytes (a Uint8Array or a DataView) and GPUBuffers are taken as the kernel's type.
    const want = kArrays[p.dtype];
    if (ArrayBuffer.isView(t.data) && !(t.data instanceof DataView) && !(t.data instanceof Uint8Array) && want && !(t.data instanceof want))
      throw new TypeError(`${name}: argument ${p.name} is a ${t.data.constructor.name}, the kernel wants ${p.dtype} (a ${want.name})`);
    const elements = t.shape.reduce((x, y) => x * y, 1), bytes = elements * dtypeBytes(p.dtype);
    if (isGpuBuffer(t.data) ? t.data.size < bytes : t.data.byteLength !== bytes)
      throw new TypeError(`${name}: argument ${p.name} (${p.dtype}) holds ${isGpuBuffer(t.data) ? t.data.size : t.data.byteLength} bytes, not the ${bytes} of shape ${shapeText(t.shape)}`);
    inputs.set(p.name, t);
  }
  // The sizes: from the inputs' axes, or arguments of their own.
  const d = {};
  for (const s of plan.sizes) {
    if (s.unread) {
      const t = inputs.get(s.input);
      d[s.name] = t && s.axis < t.shape.length ? t.shape[s.axis] : 1;
    } else if (s.input !== undefined) {
      const t = inputs.get(s.input);
      if (!t || s.axis >= t.shape.length) throw new TypeError(`${name}: argument ${s.input} has no axis ${s.axis} (for size ${s.name})`);
      d[s.name] = t.shape[s.axis];
    } else {
      if (!Number.isInteger(args[s.name])) throw new TypeError(`${name}: size ${s.name} is an argument (an integer)`);
      d[s.name] = args[s.name];
    }
  }
  // Every input's shape as the sizes make it.
  tensorParams.forEach((p, i) => {
    if (p.role !== 'input' || plan.shapes[i] === null) return;
    const want = plan.shapes[i](d), got = inputs.get(p.name).shape;
    if (want.length !== got.length || want.some((x, a) => x !== got[a]))
      throw new TypeError(`${name}: argument ${p.name} has shape ${shapeText(got)}, the kernel wants ${shapeText(want)}`);
  });
  const outParam = tensorParams.at(-1);
  const outShape = plan.shapes.at(-1)(d);
  const outBytes = outShape.reduce((x, y) => x * y, 1) * dtypeBytes(outParam.dtype);
  const scalars = {};
  kernel.params.forEach((p, i) => {
    if (p.role !== 'scalar') return;
    if (args[p.name] === undefined) throw new TypeError(`${name}: no argument ${p.name}`);
    scalars[i] = args[p.name];
  });
  const tensors = tensorParams.map((p) => {
    if (p.role !== 'input') return outBytes;
    const data = inputs.get(p.name).data;
    return isGpuBuffer(data) ? data : bytesOf(data);
  });
  const bytes = await runKernel(device, kernel, { tensors, scalars, dims: plan.kernel.dims.map((n) => d[n]) });
  return { data: typedArrayOf(outParam.dtype, bytes), shape: outShape };
}
