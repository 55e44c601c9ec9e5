// One transformer block (examples/transformer_block.zynml) in the browser:
// its six kernels, compiled ahead of time for WebGPU, run in order, and the
// host steps between them (split, reshape) done here on typed arrays.
//
// The kernels come from
//   zyntax compile examples/transformer_block.zynml --emit js --sizes-from-run -o examples/web/generated
// which compiles them for the sizes the program runs them at:
export const sizes = { batch: 2, seq: 24, hidden: 64, heads: 4, ffn: 256 };

// `x`: Float32Array [batch, seq, hidden]; `w`: the layer's weights as
// Float32Arrays (qkv_proj [hidden, 3 hidden], out_proj [hidden, hidden],
// ln1_weight, ln1_bias, ln2_weight, ln2_bias [hidden], ffn_up [hidden, ffn],
// ffn_down [ffn, hidden]). Returns the block's output, [batch, seq, hidden].
export async function transformerBlock(device, kernels, x, w) {
  const { batch, seq, hidden, heads, ffn } = sizes;
  const headDim = hidden / heads;
  const t = (data, shape) => ({ data, shape });
  const tokens = [batch, seq, hidden];

  const qkv = await kernels.qkv(device, { x: t(x, tokens), 'weights.qkv_proj': t(w.qkv_proj, [hidden, 3 * hidden]) });
  // split(qkv, 3, axis=-1), each reshaped to [batch, seq, heads, head_dim]
  const part = (p) => {
    const out = new Float32Array(batch * seq * hidden);
    for (let r = 0; r < batch * seq; ++r) out.set(qkv.data.subarray(r * 3 * hidden + p * hidden, r * 3 * hidden + (p + 1) * hidden), r * hidden);
    return t(out, [batch, seq, heads, headDim]);
  };
  const attn = await kernels.attn_out(device, { q: part(0), k: part(1), v: part(2) });
  const projected = await kernels.projected(device, {
    attn_out: t(attn.data, tokens),  // reshape(attn_out, [batch, seq, hidden])
    'weights.out_proj': t(w.out_proj, [hidden, hidden]),
  });
  const normed = await kernels.normed(device, {
    x: t(x, tokens),
    projected: t(projected.data, tokens),
    'weights.ln1_weight': w.ln1_weight,
    'weights.ln1_bias': w.ln1_bias,
  });
  const ffnOut = await kernels.ffn_out(device, {
    normed: t(normed.data, tokens),
    'weights.ffn_up': t(w.ffn_up, [hidden, ffn]),
    'weights.ffn_down': t(w.ffn_down, [ffn, hidden]),
  });
  const output = await kernels.output(device, {
    normed: t(normed.data, tokens),
    ffn_out: t(ffnOut.data, tokens),
    'weights.ln2_weight': w.ln2_weight,
    'weights.ln2_bias': w.ln2_bias,
  });
  return output.data;
}
