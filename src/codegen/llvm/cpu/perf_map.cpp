#include "codegen/llvm/cpu/perf_map.hpp"

#include <llvm/Object/ObjectFile.h>
#include <llvm/Object/SymbolSize.h>
#include <llvm/Support/MemoryBuffer.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace zyntax::codegen {

bool perf_map_wanted() {
  const char* v = std::getenv("ZYNTAX_PERF_MAP");
  return v && *v && std::string(v) != "0";
}

void add_to_perf_map(const std::string& object, const std::string& symbol, const void* address) {
  if (!perf_map_wanted()) return;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<llvm::MemoryBuffer> buffer = llvm::MemoryBuffer::getMemBuffer(object, symbol, false);
  auto file = llvm::object::ObjectFile::createObjectFile(buffer->getMemBufferRef());
  if (!file) {
    llvm::consumeError(file.takeError());
    return;
  }
  // Where `symbol` lies in the object: the others are placed relative to it.
  uint64_t anchor = 0;
  bool found = false;
  std::vector<std::pair<llvm::object::SymbolRef, uint64_t>> sizes = llvm::object::computeSymbolSizes(**file);
  for (const auto& [sym, size] : sizes) {
    auto name = sym.getName();
    auto value = sym.getAddress();
    if (name && value && *name == symbol) anchor = *value, found = true;
    if (!name) llvm::consumeError(name.takeError());
    if (!value) llvm::consumeError(value.takeError());
  }
  if (!found) return;
  std::FILE* map = std::fopen(("/tmp/perf-" + std::to_string(getpid()) + ".map").c_str(), "a");
  if (!map) return;
  for (const auto& [sym, size] : sizes) {
    auto type = sym.getType();
    auto name = sym.getName();
    auto value = sym.getAddress();
    if (type && name && value && *type == llvm::object::SymbolRef::ST_Function && size > 0)
      std::fprintf(map, "%llx %llx %s\n", static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(address) + *value - anchor),
                   static_cast<unsigned long long>(size), name->str().c_str());
    if (!type) llvm::consumeError(type.takeError());
    if (!name) llvm::consumeError(name.takeError());
    if (!value) llvm::consumeError(value.takeError());
  }
  std::fclose(map);
  std::error_code ec;
  std::filesystem::path dir(std::getenv("ZYNTAX_PERF_MAP"));
  if (std::filesystem::is_directory(dir, ec)) std::ofstream(dir / (symbol + ".o"), std::ios::binary) << object;
}

}  // namespace zyntax::codegen
