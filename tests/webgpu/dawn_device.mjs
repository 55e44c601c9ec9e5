// A WebGPU device in node for the tests: Dawn from npm's `webgpu` (js/),
// its globals installed; any adapter Dawn finds, else OpenGL ES on Mesa's
// llvmpipe (EGL without a display) in compatibility mode. Exits 77
// (skipped) without the module or an adapter.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
let webgpu;
try {
  webgpu = await import(createRequire(join(root, 'js', 'package.json')).resolve('webgpu'));
} catch (e) {
  console.log(`skipped: no node module webgpu (npm install in js/): ${e.message}`);
  process.exit(77);
}
Object.assign(globalThis, webgpu.globals);

// Exported, so kept for the whole run: Dawn's objects die with their
// instance (an unexported top-level value no function reads may be freed).
export const instances = [];
process.env.EGL_PLATFORM ??= 'surfaceless';
export let adapter = null;
// The Dawn flags and adapter options that found the adapter, for tests that
// make devices of their own.
export let choice = null;
for (const [flags, options] of [[[], {}], [['backend=opengles'], { featureLevel: 'compatibility' }]]) {
  const gpu = webgpu.create(flags);
  instances.push(gpu);
  adapter = await gpu.requestAdapter(options);
  if (adapter) {
    choice = { webgpu, dawnFlags: flags, adapterOptions: options };
    break;
  }
}
if (!adapter) {
  console.log('skipped: no WebGPU adapter');
  process.exit(77);
}
export const device = await adapter.requestDevice();
