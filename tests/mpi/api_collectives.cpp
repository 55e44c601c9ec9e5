// The C++ API's collectives (include/zyntax/distributed.hpp) under mpirun:
// buffers reduced, broadcast and gathered on the cpu device, and gradients
// averaged by GradientAverager in many small buckets (given in an order
// that starts buckets before others are complete), against what each rank
// computes for itself. Prints one line per rank when everything holds;
// exits 1 with the first difference otherwise.
#include <zyntax/distributed.hpp>
#include <zyntax/zyntax.hpp>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  }
}

}  // namespace

int main() {
  using zyntax::Buffer;
  zyntax::Communicator world = zyntax::Communicator::world();
  int r = world.rank(), n = world.size();
  zyntax::ComputeDevice dev = zyntax::ComputeDevice::open("cpu");

  Buffer x = dev.upload({float(r), 1.0f, float(2 * r)});
  world.all_reduce(x);
  std::vector<float> sum = x.to_vector();
  float ranks_sum = float(n * (n - 1) / 2);
  expect(sum == std::vector<float>{ranks_sum, float(n), 2 * ranks_sum}, "all_reduce sum");
  Buffer m = dev.upload({float(r)});
  world.all_reduce(m, zyntax::CollectiveOp::Max);
  expect(m.to_vector()[0] == float(n - 1), "all_reduce max");
  Buffer b = dev.upload({float(r), float(r)});
  world.broadcast(b, n - 1);
  expect(b.to_vector() == std::vector<float>{float(n - 1), float(n - 1)}, "broadcast");
  Buffer g = world.all_gather(dev.upload(std::vector<float>(size_t(r) + 1, float(r))));
  expect(g.size() == size_t(n * (n + 1) / 2) && g.to_vector().back() == float(n - 1), "all_gather");

  // Gradients of 5 sizes, buckets of 64 bytes (16 floats): several a bucket, one split over none.
  std::vector<size_t> sizes = {3, 20, 7, 1, 9};
  zyntax::GradientAverager average(world, sizes, 64);
  expect(average.buckets() >= 3, "buckets: " + std::to_string(average.buckets()));
  for (int step = 0; step < 2; ++step) {
    std::vector<Buffer> grads;
    for (size_t i = 0; i < sizes.size(); ++i) {
      std::vector<float> v(sizes[i]);
      for (size_t k = 0; k < v.size(); ++k) v[k] = float((r + 1) * (k + 1) + step);
      grads.push_back(dev.upload(v));
    }
    for (size_t i : {4, 3, 2, 1, 0}) average.ready(i, grads[i]);
    average.finish();
    for (size_t i = 0; i < sizes.size(); ++i) {
      std::vector<float> got = grads[i].to_vector();
      for (size_t k = 0; k < got.size(); ++k) {
        float want = float(n + 1) / 2 * float(k + 1) + float(step);
        if (std::fabs(got[k] - want) > 1e-5f * std::fabs(want)) {
          expect(false, "gradient " + std::to_string(i) + "[" + std::to_string(k) + "]: " + std::to_string(got[k]) + " != " + std::to_string(want));
          break;
        }
      }
    }
  }
  // A gradient of the wrong size is an error naming both sizes.
  try {
    average.ready(0, dev.upload({1.0f}));
    expect(false, "a gradient of the wrong size was taken");
  } catch (const zyntax::ShapeError& e) {
    expect(std::string(e.what()).find("has 1 elements, but it was made for 3") != std::string::npos, e.what());
  }
  if (failures) return 1;
  std::printf("api rank %d of %d ok\n", r, n);
  return 0;
}
