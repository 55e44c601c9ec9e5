#include "codegen/llvm/amdgpu/code_object_metadata.hpp"

#include <llvm/BinaryFormat/ELF.h>
#include <llvm/BinaryFormat/MsgPackDocument.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Support/MemoryBuffer.h>

#include <stdexcept>

namespace zyntax::codegen {

namespace {

using llvm::msgpack::DocNode;

const DocNode* field(const DocNode& map, const char* key) {
  if (!map.isMap()) return nullptr;
  auto& m = const_cast<DocNode&>(map).getMap();
  auto it = m.find(key);
  return it == m.end() ? nullptr : &it->second;
}

uint64_t number(const DocNode& map, const char* key) {
  const DocNode* n = field(map, key);
  if (!n) return 0;
  if (n->getKind() == llvm::msgpack::Type::UInt) return n->getUInt();
  if (n->getKind() == llvm::msgpack::Type::Int) return static_cast<uint64_t>(n->getInt());
  return 0;
}

std::string text(const DocNode& map, const char* key) {
  const DocNode* n = field(map, key);
  return n && n->isString() ? n->getString().str() : "";
}

AmdgpuKernelMetadata kernel(const DocNode& k) {
  AmdgpuKernelMetadata m;
  m.name = text(k, ".name");
  m.symbol = text(k, ".symbol");
  m.group_segment_fixed_size = number(k, ".group_segment_fixed_size");
  m.private_segment_fixed_size = number(k, ".private_segment_fixed_size");
  m.kernarg_segment_size = number(k, ".kernarg_segment_size");
  m.wavefront_size = static_cast<int>(number(k, ".wavefront_size"));
  m.max_flat_workgroup_size = static_cast<int>(number(k, ".max_flat_workgroup_size"));
  m.sgpr_count = static_cast<int>(number(k, ".sgpr_count"));
  m.vgpr_count = static_cast<int>(number(k, ".vgpr_count"));
  if (const DocNode* args = field(k, ".args"); args && args->isArray())
    for (const DocNode& a : const_cast<DocNode*>(args)->getArray())
      m.args.push_back({text(a, ".name"), text(a, ".value_kind"), number(a, ".offset"), number(a, ".size")});
  return m;
}

}  // namespace

const AmdgpuKernelMetadata* AmdgpuCodeObjectMetadata::find(const std::string& name) const {
  for (const AmdgpuKernelMetadata& k : kernels)
    if (k.name == name) return &k;
  return nullptr;
}

AmdgpuCodeObjectMetadata read_code_object_metadata(std::string_view elf) {
  auto file = llvm::object::ELF64LEFile::create(llvm::StringRef(elf.data(), elf.size()));
  if (!file) {
    llvm::consumeError(file.takeError());
    throw std::runtime_error("not a 64-bit ELF code object");
  }
  if (file->getHeader().e_machine != llvm::ELF::EM_AMDGPU) throw std::runtime_error("not an AMDGPU code object");
  auto headers = file->program_headers();
  if (!headers) {
    llvm::consumeError(headers.takeError());
    throw std::runtime_error("the code object's program headers do not read");
  }
  std::string blob;
  bool found = false;
  for (const auto& phdr : *headers) {
    if (phdr.p_type != llvm::ELF::PT_NOTE || found) continue;
    llvm::Error err = llvm::Error::success();
    for (const auto& note : file->notes(phdr, err)) {
      if (note.getType() != llvm::ELF::NT_AMDGPU_METADATA || note.getName() != "AMDGPU") continue;
      llvm::ArrayRef<uint8_t> desc = note.getDesc(phdr.p_align);
      blob.assign(reinterpret_cast<const char*>(desc.data()), desc.size());
      found = true;
      break;
    }
    if (err) {
      llvm::consumeError(std::move(err));
      throw std::runtime_error("the code object's notes do not read");
    }
  }
  if (!found) throw std::runtime_error("the code object has no AMDGPU metadata note");
  llvm::msgpack::Document doc;
  if (!doc.readFromBlob(blob, false)) throw std::runtime_error("the code object's metadata is not MessagePack");
  AmdgpuCodeObjectMetadata out;
  const DocNode& root = doc.getRoot();
  if (const DocNode* v = field(root, "amdhsa.version"); v && v->isArray() && const_cast<DocNode*>(v)->getArray().size() == 2) {
    auto& pair = const_cast<DocNode*>(v)->getArray();
    out.version_major = static_cast<int>(pair[0].getUInt());
    out.version_minor = static_cast<int>(pair[1].getUInt());
  }
  if (const DocNode* ks = field(root, "amdhsa.kernels"); ks && ks->isArray())
    for (const DocNode& k : const_cast<DocNode*>(ks)->getArray()) out.kernels.push_back(kernel(k));
  return out;
}

}  // namespace zyntax::codegen
