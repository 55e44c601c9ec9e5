// A small decoder-only transformer trained from scratch with the Zyntax C++
// API: character tokens, embedding, rotary positions, causal attention with
// grouped-query heads, RMSNorm, a SwiGLU MLP, a head tied to the embedding,
// AdamW. Every forward and backward step is an op of the library (kernels
// written in ZynML, compiled for the device); this file holds the model's
// wiring and nothing numeric of its own.
//
//   tiny_lm [--device auto|cpu|cuda:0] [--steps 300] [--batch 1] [--data FILE] [--seed N]
//           [--log metrics.csv] [--fusion on|off] [--check-gradients] [--quiet] [--distributed] [--save DIR]
//
// Trains on the text (by default the King James Genesis and Exodus, public
// domain), printing step, loss and tokens/s (a progress bar on a terminal, a
// line every tenth of the run otherwise), then samples from the model.
// --log writes step, loss, smoothed loss, tokens/s and seconds per step as
// CSV.
// --fusion off runs every op when it is called (by default ops wait for
// their results to be needed and fuse); the run reports the kernels a
// training step and a forward pass launch.
// --check-gradients compares the gradient of a tiny model with central
// finite differences of its loss and exits.
// --batch B takes B sequences a step (their gradients averaged).
// --save DIR writes every parameter after training as DIR/<name>.npy
// (rank 0 alone, when distributed: every rank holds the same).
// --distributed trains data-parallel over the ranks of `mpirun -np N
// tiny_lm --distributed`: every rank draws the same N*B sequences a step
// and takes its B of them, the gradients are averaged over the ranks in
// buckets as backward makes them (zyntax::GradientAverager), AdamW runs
// alike on every rank, and rank 0 reports: the same curve as one rank with
// --batch N*B, per-rank throughput and the averaging's share of a step.
#include <zyntax/distributed.hpp>
#include <zyntax/zyntax.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using zyntax::Buffer;
using zyntax::ComputeDevice;
using zyntax::ExprId;

struct Config {
  size_t vocab = 0;
  size_t dim = 128, layers = 2, heads = 4, kv_heads = 2, head_dim = 32, hidden = 384;
  size_t seq = 256;
  float lr = 3e-3f, weight_decay = 0.01f, eps = 1e-5f;
};

// A trained tensor with its AdamW moments and its gradient.
struct Param {
  std::string name;
  Buffer value, m, v, grad;
  bool decay = true;  // matrices decay; norm weights do not
};

// Characters to ids and back.
struct Tokenizer {
  std::vector<char> chars;
  std::map<char, uint32_t> ids;
  explicit Tokenizer(const std::string& text) {
    for (char c : text)
      if (!ids.count(c)) ids[c] = 0;
    for (auto& [c, id] : ids) {
      id = static_cast<uint32_t>(chars.size());
      chars.push_back(c);
    }
  }
  std::vector<uint32_t> encode(const std::string& s) const {
    std::vector<uint32_t> out;
    for (char c : s) out.push_back(ids.count(c) ? ids.at(c) : 0);
    return out;
  }
};

class Model {
 public:
  Model(const ComputeDevice& dev, Config cfg, uint32_t seed) : dev_(dev), cfg_(cfg) {
    std::mt19937 gen(seed);
    auto normal = [&](size_t n, float scale) {
      std::normal_distribution<float> d(0.0f, scale);
      std::vector<float> v(n);
      for (float& x : v) x = d(gen);
      return v;
    };
    auto add = [&](const std::string& name, std::vector<float> init, bool decay) {
      Param p{name, dev_.upload(init), dev_.alloc(init.size()), dev_.alloc(init.size()), Buffer(), decay};
      params_.push_back(p);
      return params_.size() - 1;
    };
    size_t D = cfg.dim, Q = cfg.heads * cfg.head_dim, KV = cfg.kv_heads * cfg.head_dim, F = cfg.hidden;
    auto matrix = [&](size_t in, size_t out) { return normal(in * out, 1.0f / std::sqrt(static_cast<float>(in))); };
    emb_ = add("embedding", normal(cfg.vocab * D, 0.02f), true);  // small: the tied head starts near uniform
    for (size_t l = 0; l < cfg.layers; ++l) {
      std::string p = "layer" + std::to_string(l) + ".";
      Layer L;
      L.norm1 = add(p + "norm1", std::vector<float>(D, 1.0f), false);
      L.wq = add(p + "wq", matrix(D, Q), true);
      L.wk = add(p + "wk", matrix(D, KV), true);
      L.wv = add(p + "wv", matrix(D, KV), true);
      L.wo = add(p + "wo", matrix(Q, D), true);
      L.norm2 = add(p + "norm2", std::vector<float>(D, 1.0f), false);
      L.gate = add(p + "w_gate", matrix(D, F), true);
      L.up = add(p + "w_up", matrix(D, F), true);
      L.down = add(p + "w_down", matrix(F, D), true);
      layers_.push_back(L);
    }
    norm_f_ = add("norm_final", std::vector<float>(D, 1.0f), false);
  }

  std::vector<Param>& params() { return params_; }

  // The logits of every position: [n, vocab].
  Buffer logits(const std::vector<uint32_t>& tokens) { return forward(tokens, nullptr); }

  // Called with a parameter's index as soon as backward has made its
  // gradient (in backward_order()); none when empty.
  std::function<void(size_t)> on_gradient;

  // The parameters in the order backward finishes their gradients.
  std::vector<size_t> backward_order() const {
    std::vector<size_t> order = {norm_f_};
    for (size_t l = layers_.size(); l-- > 0;) {
      const Layer& L = layers_[l];
      for (size_t i : {L.down, L.gate, L.up, L.norm2, L.wo, L.wq, L.wk, L.wv, L.norm1}) order.push_back(i);
    }
    order.push_back(emb_);
    return order;
  }

  // Mean cross-entropy of predicting targets[t] after tokens[0..t]; fills
  // every parameter's gradient.
  float loss_and_gradients(const std::vector<uint32_t>& tokens, const std::vector<uint32_t>& targets) {
    Tape tape;
    Buffer logits = forward(tokens, &tape);
    size_t n = tokens.size(), D = cfg_.dim, V = cfg_.vocab;
    auto [loss, dlogits] = dev_.cross_entropy_forward_backward(logits, dev_.upload_u32(targets), n, V, uint32_t(V));
    // Head, tied to the embedding: logits = hf @ emb^T.
    Buffer dhf = dev_.matmul(dlogits, value(emb_), n, V, D);
    Buffer demb = dev_.matmul_transposed_a(dlogits, tape.hf, V, n, D);
    auto [dh, dnf] = dev_.rms_norm_backward(tape.h_final, value(norm_f_), dhf, n, D, cfg_.eps);
    grad(norm_f_) = dnf;
    made(norm_f_);
    for (size_t l = cfg_.layers; l-- > 0;) dh = layer_backward(layers_[l], tape.layers[l], dh, n);
    dev_.add_assign(demb, dev_.embedding_backward(dh, tape.ids, V, n, D));
    grad(emb_) = demb;
    made(emb_);
    return loss;
  }

  void adamw(size_t step) {
    for (Param& p : params_)
      dev_.adamw_step(p.value, p.grad, p.m, p.v, cfg_.lr, 0.9f, 0.95f, 1e-8f, p.decay ? cfg_.weight_decay : 0.0f, step);
  }

 private:
  struct Layer {
    size_t norm1, wq, wk, wv, wo, norm2, gate, up, down;
  };
  // What the backward pass needs of each layer's forward pass.
  struct Saved {
    Buffer h_in, a, q, k, v, att, h_mid, b, g, u, s;
  };
  struct Tape {
    Buffer ids, hf, h_final;
    std::vector<Saved> layers;
  };

  Buffer& value(size_t i) { return params_[i].value; }
  Buffer& grad(size_t i) { return params_[i].grad; }
  void made(size_t i) {
    if (on_gradient) on_gradient(i);
  }

  Buffer forward(const std::vector<uint32_t>& tokens, Tape* tape) {
    size_t n = tokens.size(), D = cfg_.dim, H = cfg_.heads, KVH = cfg_.kv_heads, hd = cfg_.head_dim, F = cfg_.hidden;
    size_t Q = H * hd, KV = KVH * hd;
    Buffer ids = dev_.upload_u32(tokens);
    Buffer h = dev_.embedding(value(emb_), ids, n, D);
    if (tape) tape->ids = ids;
    for (const Layer& L : layers_) {
      Saved s;
      s.h_in = h;
      s.a = dev_.rms_norm(h, value(L.norm1), n, D, cfg_.eps);
      s.q = dev_.rope(dev_.matmul(s.a, value(L.wq), n, D, Q), n, H, hd);
      s.k = dev_.rope(dev_.matmul(s.a, value(L.wk), n, D, KV), n, KVH, hd);
      s.v = dev_.matmul(s.a, value(L.wv), n, D, KV);
      s.att = dev_.causal_attention(s.q, s.k, s.v, n, H, KVH, hd);
      s.h_mid = dev_.copy_buffer(h);
      dev_.matmul_accumulate(s.h_mid, s.att, value(L.wo), n, Q, D);  // residual
      s.b = dev_.rms_norm(s.h_mid, value(L.norm2), n, D, cfg_.eps);
      s.g = dev_.matmul(s.b, value(L.gate), n, D, F);
      s.u = dev_.matmul(s.b, value(L.up), n, D, F);
      s.s = dev_.elementwise({s.g, s.u}, n * F, [](const std::vector<ExprId>& x) { return zyntax::silu(x[0]) * x[1]; });
      h = dev_.copy_buffer(s.h_mid);
      dev_.matmul_accumulate(h, s.s, value(L.down), n, F, D);  // residual
      if (tape) tape->layers.push_back(s);
    }
    Buffer hf = dev_.rms_norm(h, value(norm_f_), n, D, cfg_.eps);
    if (tape) {
      tape->h_final = h;
      tape->hf = hf;
    }
    return dev_.matmul_transposed_b(hf, value(emb_), n, D, cfg_.vocab);
  }

  // The gradient flowing into the layer's input, from the one at its output.
  Buffer layer_backward(const Layer& L, const Saved& s, const Buffer& dh, size_t n) {
    size_t D = cfg_.dim, H = cfg_.heads, KVH = cfg_.kv_heads, hd = cfg_.head_dim, F = cfg_.hidden;
    size_t Q = H * hd, KV = KVH * hd;
    // MLP: h = h_mid + (silu(g) * u) @ down, g = b @ gate, u = b @ up.
    grad(L.down) = dev_.matmul_transposed_a(s.s, dh, F, n, D);
    made(L.down);
    Buffer ds = dev_.matmul_transposed_b(dh, value(L.down), n, D, F);
    std::vector<Buffer> dgu = dev_.elementwise_multi({ds, s.g, s.u}, n * F, [](const std::vector<ExprId>& x) {
      ExprId sig = zyntax::sigmoid(x[1]);
      ExprId dsilu = sig * (1.0f + x[1] * (1.0f - sig));
      return std::vector<ExprId>{x[0] * x[2] * dsilu, x[0] * x[1] * sig};
    });
    grad(L.gate) = dev_.matmul_transposed_a(s.b, dgu[0], D, n, F);
    made(L.gate);
    grad(L.up) = dev_.matmul_transposed_a(s.b, dgu[1], D, n, F);
    made(L.up);
    Buffer db = dev_.matmul_transposed_b(dgu[0], value(L.gate), n, F, D);
    dev_.add_assign(db, dev_.matmul_transposed_b(dgu[1], value(L.up), n, F, D));
    auto [dmid, dn2] = dev_.rms_norm_backward(s.h_mid, value(L.norm2), db, n, D, cfg_.eps);
    grad(L.norm2) = dn2;
    made(L.norm2);
    dev_.add_assign(dmid, dh);
    // Attention: h_mid = h_in + att @ wo.
    grad(L.wo) = dev_.matmul_transposed_a(s.att, dmid, Q, n, D);
    made(L.wo);
    Buffer datt = dev_.matmul_transposed_b(dmid, value(L.wo), n, D, Q);
    auto [dq, dk, dv] = dev_.causal_attention_backward(datt, s.q, s.k, s.v, n, H, KVH, hd);
    dq = dev_.rope_backward(dq, n, H, hd);
    dk = dev_.rope_backward(dk, n, KVH, hd);
    grad(L.wq) = dev_.matmul_transposed_a(s.a, dq, D, n, Q);
    made(L.wq);
    grad(L.wk) = dev_.matmul_transposed_a(s.a, dk, D, n, KV);
    made(L.wk);
    grad(L.wv) = dev_.matmul_transposed_a(s.a, dv, D, n, KV);
    made(L.wv);
    Buffer da = dev_.matmul_transposed_b(dq, value(L.wq), n, Q, D);
    dev_.add_assign(da, dev_.matmul_transposed_b(dk, value(L.wk), n, KV, D));
    dev_.add_assign(da, dev_.matmul_transposed_b(dv, value(L.wv), n, KV, D));
    auto [din, dn1] = dev_.rms_norm_backward(s.h_in, value(L.norm1), da, n, D, cfg_.eps);
    grad(L.norm1) = dn1;
    made(L.norm1);
    dev_.add_assign(din, dmid);
    return din;
  }

  ComputeDevice dev_;
  Config cfg_;
  std::vector<Param> params_;
  std::vector<Layer> layers_;
  size_t emb_ = 0, norm_f_ = 0;
};

// A parameter as a NumPy .npy file (version 1.0, little-endian f32, one axis).
void save_npy(const std::string& path, const std::vector<float>& v) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(v.size()) + ",), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  uint16_t len = static_cast<uint16_t>(header.size());
  out.write("\x93NUMPY\x01\x00", 8);
  out.write(reinterpret_cast<const char*>(&len), 2);
  out << header;
  out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string sample(Model& model, const Tokenizer& tok, const Config& cfg, const std::string& prompt, size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<uint32_t> ids = tok.encode(prompt);
  std::string out = prompt;
  for (size_t i = 0; i < n; ++i) {
    // Always a window of cfg.seq tokens, so the kernels compiled for
    // training serve: the text at its start, zeros after it, which the
    // causal mask keeps out of the position read.
    size_t used = std::min(ids.size(), cfg.seq);
    std::vector<uint32_t> window(ids.end() - used, ids.end());
    window.resize(cfg.seq, 0);
    std::vector<float> logits = model.logits(window).to_vector();
    const float* last = logits.data() + (used - 1) * cfg.vocab;
    std::vector<double> p(cfg.vocab);
    double mx = *std::max_element(last, last + cfg.vocab), sum = 0;
    for (size_t c = 0; c < cfg.vocab; ++c) sum += p[c] = std::exp((last[c] - mx) / 0.8);
    std::discrete_distribution<uint32_t> pick(p.begin(), p.end());
    uint32_t next = pick(gen);
    ids.push_back(next);
    out += tok.chars[next];
  }
  return out;
}

// The loss's gradient against central differences, on a tiny model.
int check_gradients(const ComputeDevice& dev) {
  Config cfg;
  cfg.vocab = 11;
  cfg.dim = 8, cfg.layers = 2, cfg.heads = 4, cfg.kv_heads = 2, cfg.head_dim = 2, cfg.hidden = 12, cfg.seq = 6;
  Model model(dev, cfg, 7);
  std::vector<uint32_t> x = {1, 5, 2, 9, 3, 3}, y = {5, 2, 9, 3, 3, 10};
  model.loss_and_gradients(x, y);
  int bad = 0;
  for (Param& p : model.params()) {
    std::vector<float> w = p.value.to_vector(), g = p.grad.to_vector();
    for (size_t i = 0; i < w.size(); i += std::max<size_t>(1, w.size() / 5)) {
      auto loss_at = [&](float delta) {
        std::vector<float> moved = w;
        moved[i] += delta;
        Buffer saved = p.value;
        p.value = dev.upload(moved);
        float l = model.loss_and_gradients(x, y);
        p.value = saved;
        return l;
      };
      const float h = 1e-2f;
      double fd = (double(loss_at(h)) - double(loss_at(-h))) / (2.0 * h);
      model.loss_and_gradients(x, y);  // the gradients of the unmoved model again
      g = p.grad.to_vector();
      bool ok = std::fabs(fd - g[i]) <= 2e-3 + 2e-2 * std::fabs(fd);
      if (!ok) ++bad;
      std::printf("%-16s [%3zu] analytic % .6f  finite difference % .6f  %s\n", p.name.c_str(), i, g[i], fd, ok ? "ok" : "MISMATCH");
    }
  }
  std::printf(bad ? "%d gradients disagree\n" : "all gradients agree\n", bad);
  return bad ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string device = "auto", data = TINY_LM_DATA;
  size_t steps = 300, batch = 1;
  uint32_t seed = 1;
  bool gradients = false, quiet = false, fusion = true, distributed = false;
  std::string log_path, save_dir;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--device") device = next();
    else if (a == "--steps") steps = std::stoul(next());
    else if (a == "--batch") batch = std::max<size_t>(1, std::stoul(next()));
    else if (a == "--distributed") distributed = true;
    else if (a == "--save") save_dir = next();
    else if (a == "--data") data = next();
    else if (a == "--seed") seed = static_cast<uint32_t>(std::stoul(next()));
    else if (a == "--check-gradients") gradients = true;
    else if (a == "--quiet") quiet = true;
    else if (a == "--log") log_path = next();
    else if (a == "--fusion") {
      std::string v = next();
      if (v != "on" && v != "off") throw std::invalid_argument("--fusion takes on or off, not " + v);
      fusion = v == "on";
    }
    else {
      std::fprintf(stderr,
                   "usage: tiny_lm [--device ID] [--steps N] [--batch B] [--data FILE] [--seed N] [--log FILE.csv] [--fusion on|off] "
                   "[--check-gradients] [--quiet] [--distributed] [--save DIR]\n");
      return 2;
    }
  }
  try {
    ComputeDevice dev = ComputeDevice::open(device);
    dev.set_fusion(fusion);
    if (gradients) return check_gradients(dev);
    // Without --distributed, one rank of its own (and MPI is not started).
    std::optional<zyntax::Communicator> world;
    if (distributed) world = zyntax::Communicator::world();
    int rank = world ? world->rank() : 0, ranks = world ? world->size() : 1;
    if (rank != 0) quiet = true, log_path.clear();  // rank 0 reports
    std::string text = read_file(data);
    Tokenizer tok(text);
    Config cfg;
    cfg.vocab = tok.chars.size();
    std::vector<uint32_t> all = tok.encode(text);
    Model model(dev, cfg, seed);
    size_t n_params = 0;
    for (Param& p : model.params()) n_params += p.value.size();
    if (rank == 0)
      std::printf("tiny_lm on %s (%s): %zu characters of text, vocabulary %zu (ln %.2f), %zu parameters; %zu sequence%s a step%s\n",
                  dev.id().c_str(), dev.description().name.c_str(), all.size(), cfg.vocab, std::log(double(cfg.vocab)), n_params,
                  batch * ranks, batch * ranks == 1 ? "" : "s",
                  ranks > 1 ? (", " + std::to_string(batch) + " on each of " + std::to_string(ranks) + " ranks").c_str() : "");
    // Gradients averaged over the sequences of a step (and, distributed,
    // over the ranks, in buckets as backward makes them).
    std::vector<size_t> order = model.backward_order(), position(model.params().size());
    std::vector<size_t> sizes;
    for (size_t k = 0; k < order.size(); ++k) {
      position[order[k]] = k;
      sizes.push_back(model.params()[order[k]].value.size());
    }
    std::optional<zyntax::GradientAverager> average;
    if (world) average.emplace(*world, sizes);
    std::vector<Buffer> summed(model.params().size());
    double averaging_seconds = 0;
    std::FILE* log = nullptr;
    if (!log_path.empty()) {
      log = std::fopen(log_path.c_str(), "w");
      if (!log) throw std::runtime_error("cannot write " + log_path + ": " + std::strerror(errno));
      std::fprintf(log, "step,loss,smoothed_loss,tokens_per_second,seconds\n");
    }
    // A progress bar redrawn in place only on a terminal; elsewhere (a log
    // file, CI) a line every tenth of the run.
    bool terminal = isatty(fileno(stdout)) && rank == 0;
    std::mt19937 gen(seed);
    std::uniform_int_distribution<size_t> start(0, all.size() - cfg.seq - 2);
    auto t0 = std::chrono::steady_clock::now();
    auto warm = t0;  // after the first step, which compiles every kernel (or loads it from the cache)
    double first = 0, last = 0, smoothed = 0;
    uint64_t step_kernels = 0;
    for (size_t step = 1; step <= steps; ++step) {
      // Every rank draws the step's sequences alike and takes its own.
      std::vector<size_t> starts(batch * ranks);
      for (size_t& s : starts) s = start(gen);
      uint64_t launched = dev.kernel_launches();
      double loss = 0;
      for (size_t j = 0; j < batch; ++j) {
        size_t s = starts[rank * batch + j];
        std::vector<uint32_t> x(all.begin() + s, all.begin() + s + cfg.seq), y(all.begin() + s + 1, all.begin() + s + cfg.seq + 1);
        bool last_sequence = j + 1 == batch;
        // A gradient is final once the step's last sequence has made its
        // own: the sum over the sequences, over their number.
        model.on_gradient = [&, j, last_sequence](size_t i) {
          Param& p = model.params()[i];
          if (j == 0 && !last_sequence) summed[i] = dev.copy_buffer(p.grad);
          if (j > 0) {
            dev.add_assign(summed[i], p.grad);
            p.grad = summed[i];
          }
          if (!last_sequence) return;
          if (batch > 1) {
            float inv = 1.0f / float(batch);
            p.grad = dev.elementwise({p.grad}, p.grad.size(), [inv](const std::vector<ExprId>& g) { return g[0] * inv; });
          }
          if (average) {
            dev.sync();  // the gradient computed (outside the averaging's time)
            auto a0 = std::chrono::steady_clock::now();
            average->ready(position[i], p.grad);
            averaging_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - a0).count();
          }
        };
        loss += model.loss_and_gradients(x, y) / double(batch);
      }
      if (average) {
        auto a0 = std::chrono::steady_clock::now();
        average->finish();
        Buffer l = dev.upload({float(loss)});
        world->all_reduce(l, zyntax::CollectiveOp::Mean);
        loss = l.to_vector()[0];
        averaging_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - a0).count();
      }
      model.adamw(step);
      dev.sync();
      step_kernels = dev.kernel_launches() - launched;
      if (step == 1) {
        first = smoothed = loss;
        warm = std::chrono::steady_clock::now();
        averaging_seconds = 0;  // the first step's is mostly the other ranks compiling
      }
      smoothed = 0.9 * smoothed + 0.1 * loss;
      last = loss;
      auto now = std::chrono::steady_clock::now();
      double secs = std::chrono::duration<double>(now - warm).count();
      double tps = step > 1 ? double((step - 1) * cfg.seq * batch) / secs : 0;  // this rank's
      if (log) std::fprintf(log, "%zu,%.6f,%.6f,%.1f,%.6f\n", step, loss, smoothed, tps,
                            std::chrono::duration<double>(now - t0).count());
      if (terminal && (!quiet || step == steps)) {
        int filled = static_cast<int>(30 * step / steps);
        std::printf("\rstep %4zu/%zu [%.*s%*s] loss %.3f (avg %.3f)  %.0f tokens/s", step, steps, filled,
                    "==============================", 30 - filled, "", loss, smoothed, tps);
        std::fflush(stdout);
      } else if (!terminal && (step == steps || (!quiet && step % std::max<size_t>(1, steps / 10) == 0))) {
        std::printf("step %zu/%zu loss %.3f (avg %.3f) %.0f tokens/s\n", step, steps, loss, smoothed, tps);
      }
    }
    if (log && std::fclose(log) != 0) throw std::runtime_error("cannot write " + log_path);
    auto end = std::chrono::steady_clock::now();
    double secs = std::chrono::duration<double>(end - t0).count();
    double steady = std::chrono::duration<double>(end - warm).count();
    if (rank != 0) return 0;
    if (!save_dir.empty()) {
      for (Param& p : model.params()) save_npy(save_dir + "/" + p.name + ".npy", p.value.to_vector());
      std::printf("parameters saved in %s (%zu .npy files)\n", save_dir.c_str(), model.params().size());
    }
    std::printf("%sloss %.3f -> %.3f (smoothed %.3f) in %zu steps, %.1f s (first step %.2f s); %.0f tokens/s after the first step\n",
                terminal ? "\n" : "", first, last, smoothed, steps, secs, secs - steady,
                steps > 1 ? double((steps - 1) * cfg.seq * batch) / steady : 0.0);
    if (average)
      std::printf("data-parallel over %d ranks: %.0f tokens/s per rank, gradient averaging %.1f%% of a step (%zu buckets)\n", ranks,
                  steps > 1 ? double((steps - 1) * cfg.seq * batch) / steady : 0.0, steady > 0 ? 100.0 * averaging_seconds / steady : 0.0,
                  average->buckets());
    uint64_t launched = dev.kernel_launches();
    model.logits(std::vector<uint32_t>(all.begin(), all.begin() + cfg.seq)).to_vector();
    std::printf("kernels launched: %llu per training step, %llu per forward pass (fusion %s)\n",
                static_cast<unsigned long long>(step_kernels), static_cast<unsigned long long>(dev.kernel_launches() - launched),
                fusion ? "on" : "off");
    std::printf("sample: %s\n", sample(model, tok, cfg, "And God said", 200, seed).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tiny_lm: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
