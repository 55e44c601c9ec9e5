// The specification's `pipeline transformer_block` (examples/, in ZynML) and
// the same block composed from the C++ API's ops agree within 1e-4: the
// program runs through the zyntax command and saves its input, weights and
// output; the test recomputes the output with matmul, attention over all
// keys (kv_attention of each query over the whole sequence), layer_norm and
// a traced GELU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "zyntax/zyntax.hpp"

namespace {

using namespace zyntax;

// A C-order little-endian f32 .npy file: its elements.
std::vector<float> load_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes.substr(0, 6), "\x93NUMPY") << path;
  size_t header = bytes[6] == 1 ? 10 + (uint8_t(bytes[8]) | uint8_t(bytes[9]) << 8)
                                 : 12 + (uint8_t(bytes[8]) | uint8_t(bytes[9]) << 8 | uint8_t(bytes[10]) << 16);
  EXPECT_NE(bytes.find("'<f4'"), std::string::npos) << path;
  std::vector<float> v((bytes.size() - header) / 4);
  std::memcpy(v.data(), bytes.data() + header, v.size() * 4);
  return v;
}

TEST(TransformerBlock, PipelineAndComposedOpsAgree) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(::testing::TempDir()) / "zyntax_transformer_block";
  fs::create_directories(dir);
  std::string program = std::string(ZYNTAX_SOURCE_DIR) + "/tests/api/data/transformer_block_io.zynml";
  std::string cmd = "cd " + dir.string() + " && " + ZYNTAX_BINARY + " run " + program + " --device cpu";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto npy = [&](const char* name) { return load_npy((dir / (std::string(name) + ".npy")).string()); };
  const size_t B = 2, S = 24, H = 64, heads = 4, hd = 16, F = 256;
  std::vector<float> x = npy("x"), want = npy("y"), qkv = npy("qkv_proj");
  ASSERT_EQ(x.size(), B * S * H);

  ComputeDevice dev = ComputeDevice::open("cpu");
  // The fused QKV weight's column blocks.
  auto columns = [&](size_t from) {
    std::vector<float> w(H * H);
    for (size_t i = 0; i < H; ++i) std::memcpy(&w[i * H], &qkv[i * 3 * H + from], H * 4);
    return dev.upload(w);
  };
  Buffer X = dev.upload(x);
  Buffer q = dev.matmul(X, columns(0), B * S, H, H), k = dev.matmul(X, columns(H), B * S, H, H),
         v = dev.matmul(X, columns(2 * H), B * S, H, H);
  // Attention over every key of the same sequence: each query on its own,
  // as the last position of a cache that holds the whole sequence.
  std::vector<float> qh = q.to_vector(), kh = k.to_vector(), vh = v.to_vector(), attn(B * S * H);
  for (size_t b = 0; b < B; ++b) {
    Buffer kb = dev.upload(std::vector<float>(kh.begin() + b * S * H, kh.begin() + (b + 1) * S * H));
    Buffer vb = dev.upload(std::vector<float>(vh.begin() + b * S * H, vh.begin() + (b + 1) * S * H));
    for (size_t i = 0; i < S; ++i) {
      Buffer row = dev.upload(&qh[(b * S + i) * H], H);
      std::vector<float> o = dev.kv_attention(row, kb, vb, S - 1, 1, heads, heads, hd).to_vector();
      std::memcpy(&attn[(b * S + i) * H], o.data(), H * 4);
    }
  }
  auto add = [&](const Buffer& a, const Buffer& c, size_t n) {
    return dev.elementwise({a, c}, n, [](const std::vector<ExprId>& t) { return t[0] + t[1]; });
  };
  Buffer projected = dev.matmul(dev.upload(attn), dev.upload(npy("out_proj")), B * S, H, H);
  Buffer normed = dev.layer_norm(add(X, projected, B * S * H), dev.upload(npy("ln1_weight")), dev.upload(npy("ln1_bias")), B * S, H, 1e-6f);
  Buffer up = dev.matmul(normed, dev.upload(npy("ffn_up")), B * S, H, F);
  Buffer act = dev.elementwise({up}, B * S * F, [](const std::vector<ExprId>& t) {
    ExprId x = t[0];
    return x * 0.5f * (1.0f + tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
  });
  Buffer down = dev.matmul(act, dev.upload(npy("ffn_down")), B * S, F, H);
  std::vector<float> got = dev.layer_norm(add(normed, down, B * S * H), dev.upload(npy("ln2_weight")), dev.upload(npy("ln2_bias")),
                                          B * S, H, 1e-6f).to_vector();
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(double(got[i]) - want[i]));
  EXPECT_LE(worst, 1e-4) << "largest difference between the pipeline and the composed ops";
  std::printf("largest difference: %.3g\n", worst);
}

}  // namespace
