#include "codegen/glsl/spirv_float_controls.hpp"

#include <cstring>
#include <sstream>
#include <stdexcept>

namespace zyntax::codegen {

namespace {

// SPIR-V opcodes, capability and execution mode used here (SPIR-V 1.6 spec, 3.x).
constexpr uint32_t kOpExtension = 10;
constexpr uint32_t kOpEntryPoint = 15;
constexpr uint32_t kOpExecutionMode = 16;
constexpr uint32_t kOpCapability = 17;
constexpr uint32_t kCapabilitySignedZeroInfNanPreserve = 4466;
constexpr uint32_t kModeSignedZeroInfNanPreserve = 4461;
constexpr const char* kExtension = "SPV_KHR_float_controls";
constexpr size_t kHeaderWords = 5;

uint32_t instruction(uint32_t opcode, size_t words) { return static_cast<uint32_t>(words) << 16 | opcode; }

// A literal string as SPIR-V words: nul-terminated, padded to a word.
std::vector<uint32_t> literal_string(const std::string& s) {
  std::vector<uint32_t> w(s.size() / 4 + 1, 0);
  std::memcpy(w.data(), s.data(), s.size());
  return w;
}

}  // namespace

std::vector<uint32_t> preserved_float_widths(const std::string& glsl) {
  std::vector<uint32_t> widths;
  size_t at = glsl.find(kPreservePragma);
  if (at == std::string::npos) return widths;
  size_t end = glsl.find('\n', at);
  std::istringstream line(glsl.substr(at + std::strlen(kPreservePragma), end == std::string::npos ? std::string::npos : end - at - std::strlen(kPreservePragma)));
  for (uint32_t w; line >> w;) widths.push_back(w);
  return widths;
}

void declare_signed_zero_inf_nan_preserve(std::vector<uint32_t>& words, const std::vector<uint32_t>& widths) {
  if (widths.empty()) return;
  if (words.size() < kHeaderWords) throw std::runtime_error("SPIR-V module without a header");
  // Where each kind of declaration goes: after the last of its section.
  size_t capabilities_end = 0, extensions_end = 0, modes_end = 0;
  bool has_capability = false, has_extension = false;
  std::vector<uint32_t> declared_widths;
  uint32_t entry_point = 0;
  bool found_entry = false;
  for (size_t at = kHeaderWords; at < words.size();) {
    uint32_t opcode = words[at] & 0xffffu, count = words[at] >> 16;
    if (count == 0 || at + count > words.size()) throw std::runtime_error("malformed SPIR-V instruction");
    size_t next = at + count;
    switch (opcode) {
      case kOpCapability:
        capabilities_end = next;
        has_capability |= count >= 2 && words[at + 1] == kCapabilitySignedZeroInfNanPreserve;
        break;
      case kOpExtension:
        extensions_end = next;
        has_extension |= std::strncmp(reinterpret_cast<const char*>(&words[at + 1]), kExtension, (count - 1) * 4) == 0;
        break;
      case kOpEntryPoint:
        if (found_entry) throw std::runtime_error("SPIR-V module with more than one entry point");
        if (count < 3) throw std::runtime_error("malformed OpEntryPoint");
        entry_point = words[at + 2];
        found_entry = true;
        modes_end = next;
        break;
      case kOpExecutionMode:
        modes_end = next;
        if (count == 4 && words[at + 2] == kModeSignedZeroInfNanPreserve) declared_widths.push_back(words[at + 3]);
        break;
      default: break;
    }
    at = next;
  }
  if (!found_entry || capabilities_end == 0) throw std::runtime_error("SPIR-V module without an entry point or capabilities");
  if (extensions_end == 0) extensions_end = capabilities_end;
  // Inserted from the back, so that the earlier positions still hold.
  std::vector<uint32_t> modes;
  for (uint32_t w : widths) {
    bool already = false;
    for (uint32_t d : declared_widths) already |= d == w;
    if (!already) modes.insert(modes.end(), {instruction(kOpExecutionMode, 4), entry_point, kModeSignedZeroInfNanPreserve, w});
  }
  words.insert(words.begin() + static_cast<std::ptrdiff_t>(modes_end), modes.begin(), modes.end());
  if (!has_extension) {
    std::vector<uint32_t> name = literal_string(kExtension);
    std::vector<uint32_t> ext{instruction(kOpExtension, name.size() + 1)};
    ext.insert(ext.end(), name.begin(), name.end());
    words.insert(words.begin() + static_cast<std::ptrdiff_t>(extensions_end), ext.begin(), ext.end());
  }
  if (!has_capability) {
    uint32_t cap[] = {instruction(kOpCapability, 2), kCapabilitySignedZeroInfNanPreserve};
    words.insert(words.begin() + static_cast<std::ptrdiff_t>(capabilities_end), std::begin(cap), std::end(cap));
  }
}

}  // namespace zyntax::codegen
