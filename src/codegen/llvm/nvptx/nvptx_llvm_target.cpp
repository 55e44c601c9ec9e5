#include "codegen/llvm/nvptx/nvptx_llvm_target.hpp"

#include <llvm/IR/IntrinsicsNVPTX.h>

#include <algorithm>
#include <bit>
#include <map>

#include "cir/visitor.hpp"
#include "codegen/llvm/emitter.hpp"
#include "codegen/llvm/gpu_entry.hpp"
#include "codegen/llvm/integer_power_ir.hpp"
#include "codegen/llvm/kernel_abi.hpp"
#include "codegen/llvm/nvptx/nvptx_target.hpp"
#include "codegen/llvm/nvptx/tensor_map_args.hpp"
#include "codegen/llvm/nvptx/tile_mma.hpp"
#include "plan/gpu_plan.hpp"

namespace zyntax::codegen {

namespace {

// What the NVPTX hooks keep per kernel (Emitter::target_state holds one
// type, so every hook of this target shares this one): the registers of
// the tensor-core accumulators, by name, and the entry's tensor map
// parameters (tensor_map_args).
struct NvptxState : Emitter::TargetState {
  std::map<std::string, TileMmaFragments> fragments;
  std::vector<llvm::Value*> tensor_maps;
};

// The most threads a warpgroup product of the kernel runs with (0: none).
class ProductThreads : public cir::IRVisitor {
 public:
  int threads = 0;
  using cir::IRVisitor::visit;
  void visit(const cir::WarpgroupProduct* op) override {
    threads = std::max(threads, op->threads());
    cir::IRVisitor::visit(op);
  }
  void visit(const cir::WarpgroupAttention* op) override {
    threads = std::max(threads, op->threads());
    cir::IRVisitor::visit(op);
  }
};

}  // namespace

const std::vector<llvm::Value*>& tensor_map_args(Emitter& e) { return e.target_state<NvptxState>().tensor_maps; }

// An NVPTX kernel entry point taking every value as a parameter
// (kernel_abi.hpp), with the most threads of a block as its launch bound.
// After the status pointer, a tensor map per factor of each warpgroup
// product: a generic pointer to a 128-byte by-value parameter, 64-byte
// aligned, read in place (grid_constant: its generic address, cvta.param,
// is what cp.async.bulk.tensor takes). A kernel with a warpgroup product is
// bound to exactly its block (maxntid = its threads, minctasm 1), so that
// ptxas caps registers at 65536 / threads and setmaxnreg may move them.
void NvptxLlvmTarget::emit_entry(Emitter& e) const {
  llvm::LLVMContext& ctx = e.context();
  llvm::IRBuilder<>& b = e.builder();
  const cir::Kernel& k = e.kernel();
  std::vector<TensorMapParam> maps = tensor_map_params(k);
  llvm::Type* generic = llvm::PointerType::get(ctx, 0);
  std::vector<std::pair<llvm::Type*, std::string>> extra;
  for (size_t i = 0; i < maps.size(); ++i) extra.emplace_back(generic, "tensor_map" + std::to_string(i));
  GpuEntry entry = create_gpu_entry(e, global_address_space(), extra);
  llvm::Function* fn = entry.function;
  size_t status_slot = entry.status;
  std::vector<llvm::Value*>& map_args = e.target_state<NvptxState>().tensor_maps;
  map_args.clear();
  llvm::Type* map_bytes = llvm::ArrayType::get(b.getInt8Ty(), kTensorMapBytes);
  for (size_t i = 0; i < maps.size(); ++i) {
    llvm::Argument* a = fn->getArg(static_cast<unsigned>(status_slot + 1 + i));
    a->addAttr(llvm::Attribute::getWithByValType(ctx, map_bytes));
    a->addAttr(llvm::Attribute::getWithAlignment(ctx, llvm::Align(64)));
    map_args.push_back(a);
  }
  llvm::NamedMDNode* annotations = e.module().getOrInsertNamedMetadata("nvvm.annotations");
  auto annotate = [&](const char* key, int value) {
    annotations->addOperand(llvm::MDNode::get(ctx, {llvm::ValueAsMetadata::get(fn), llvm::MDString::get(ctx, key),
                                                     llvm::ConstantAsMetadata::get(b.getInt32(value))}));
  };
  annotate("kernel", 1);
  ProductThreads product;
  product.include(k.body);
  if (product.threads > 0) {
    annotate("maxntidx", product.threads);
    annotate("minctasm", 1);
  } else {
    annotate("maxntidx", std::min(kGpuBlockThreads, target_.max_threads_per_block));
  }
  if (!maps.empty()) {
    // One annotation listing every tensor map's parameter, counted from 1.
    std::vector<llvm::Metadata*> positions;
    for (size_t i = 0; i < maps.size(); ++i)
      positions.push_back(llvm::ConstantAsMetadata::get(b.getInt32(static_cast<uint32_t>(status_slot + 2 + i))));
    annotations->addOperand(llvm::MDNode::get(
        ctx, {llvm::ValueAsMetadata::get(fn), llvm::MDString::get(ctx, "grid_constant"), llvm::MDNode::get(ctx, positions)}));
  }
  bind_gpu_entry(e, entry);
}

llvm::Value* NvptxLlvmTarget::coordinate(llvm::IRBuilder<>& b, cir::GpuIndexKind kind, int axis) const {
  using I = llvm::Intrinsic::ID;
  static constexpr I ids[4][3] = {
      {llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y, llvm::Intrinsic::nvvm_read_ptx_sreg_tid_z},
      {llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x, llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y, llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z},
      {llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x, llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_y, llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_z},
      {llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x, llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_y, llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_z}};
  return b.CreateZExt(b.CreateIntrinsic(ids[static_cast<int>(kind)][axis], {}, {}), b.getInt64Ty());
}

void NvptxLlvmTarget::barrier(llvm::IRBuilder<>& b) const { b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {}); }

llvm::Value* NvptxLlvmTarget::active_lanes(llvm::IRBuilder<>& b) const { return b.CreateIntrinsic(llvm::Intrinsic::nvvm_activemask, {}, {}); }

llvm::Value* NvptxLlvmTarget::shuffle_xor(llvm::IRBuilder<>& b, llvm::Value* word, int offset, llvm::Value* lanes) const {
  llvm::Intrinsic::ID id = word->getType()->isFloatTy() ? llvm::Intrinsic::nvvm_shfl_sync_bfly_f32 : llvm::Intrinsic::nvvm_shfl_sync_bfly_i32;
  return b.CreateIntrinsic(id, {}, {lanes, word, b.getInt32(static_cast<uint32_t>(offset)), b.getInt32(static_cast<uint32_t>(target_.subgroup_size - 1))});
}

// The NVVM intrinsics of block- and system-scope atomics (atom.cta,
// atom.sys) on 32/64-bit words; generic pointers, as they take.
std::optional<llvm::Value*> NvptxLlvmTarget::scoped_atomic(Emitter& e, llvm::AtomicRMWInst::BinOp op, llvm::Value* ptr, llvm::Value* value,
                                                           llvm::Value* expected, cir::FenceScope scope) const {
  if (scope == cir::FenceScope::Device) return std::nullopt;
  llvm::Type* type = value->getType();
  bool cta = scope == cir::FenceScope::Block;
  unsigned bits = type->getPrimitiveSizeInBits();
  bool word = type->isIntegerTy() && (bits == 32 || bits == 64);
  bool fword = type->isFloatTy() || type->isDoubleTy();
  using RMW = llvm::AtomicRMWInst::BinOp;
  namespace I = llvm::Intrinsic;
  std::optional<llvm::Intrinsic::ID> id;
  switch (op) {
    case RMW::BAD_BINOP: if (word) id = cta ? I::nvvm_atomic_cas_gen_i_cta : I::nvvm_atomic_cas_gen_i_sys; break;
    case RMW::Add: if (word) id = cta ? I::nvvm_atomic_add_gen_i_cta : I::nvvm_atomic_add_gen_i_sys; break;
    case RMW::FAdd: if (fword) id = cta ? I::nvvm_atomic_add_gen_f_cta : I::nvvm_atomic_add_gen_f_sys; break;
    case RMW::Min: if (word) id = cta ? I::nvvm_atomic_min_gen_i_cta : I::nvvm_atomic_min_gen_i_sys; break;
    case RMW::Max: if (word) id = cta ? I::nvvm_atomic_max_gen_i_cta : I::nvvm_atomic_max_gen_i_sys; break;
    case RMW::Xchg: if (word) id = cta ? I::nvvm_atomic_exch_gen_i_cta : I::nvvm_atomic_exch_gen_i_sys; break;
    default: break;
  }
  if (!id) return std::nullopt;
  llvm::IRBuilder<>& b = e.builder();
  llvm::Value* p = ptr->getType()->getPointerAddressSpace() == 0 ? ptr : b.CreateAddrSpaceCast(ptr, llvm::PointerType::getUnqual(e.context()));
  if (op == RMW::BAD_BINOP) return b.CreateIntrinsic(*id, {type, p->getType()}, {p, expected, value});
  return b.CreateIntrinsic(*id, {type, p->getType()}, {p, value});
}

// A step of a tensor-core tile product (codegen/llvm/nvptx/tile_mma). The
// fragment's registers are one array per thread, made at the first step
// and kept with the kernel's lowering.
void NvptxLlvmTarget::emit_tile_mma(Emitter& e, const cir::TileMma& m) const {
  llvm::IRBuilder<>& b = e.builder();
  auto& fragments = e.target_state<NvptxState>().fragments;
  auto it = fragments.find(m.acc);
  if (it == fragments.end()) {
    const cir::Type& t = e.fragment_type(m.acc);
    codegen::TileMmaFragments f;
    f.rows = static_cast<int>(t.shape[0].as<cir::IntImm>()->value);
    f.cols = static_cast<int>(t.shape[1].as<cir::IntImm>()->value);
    f.warp_rows = m.warp_rows;
    f.warp_cols = m.warp_cols;
    f.warp = b.CreateLShr(e.gpu_coordinate(cir::GpuIndexKind::ThreadIdx, 0), std::countr_zero(static_cast<unsigned>(target_.subgroup_size)));
    f.pieces = e.entry_alloca(codegen::tile_mma_storage_type(e.context(), f), m.acc);
    it = fragments.emplace(m.acc, f).first;
  }
  codegen::TileMmaFragments& f = it->second;
  switch (m.step) {
    case cir::TileMma::Step::Zero: return codegen::emit_mma_zero(b, f);
    case cir::TileMma::Step::Accumulate: {
      const Emitter::Buffer& a = e.buffer(m.a);
      f.factors = a.type.dtype;
      return codegen::emit_mma_accumulate(b, f, a.ptr, m.lda, e.buffer(m.b).ptr, m.ldb, m.depth, m.b_transposed, m.a_exact, m.b_exact);
    }
    case cir::TileMma::Step::Store: return codegen::emit_mma_store(b, f, e.buffer(m.d).ptr, m.ldd, m.row0, m.count);
  }
}

// A step of a thread's asynchronous copies (cir::AsyncCopy) with the
// cp.async intrinsics: 16-byte runs bypass L1 (.cg; a tile read once per
// block), shorter ones go through it (.ca, the only form they have). The
// source size operand makes the copy read `valid` elements and zero the
// rest; with none read, the source address is the input's first element,
// so that no address outside it is formed.
void NvptxLlvmTarget::emit_async_copy(Emitter& e, const cir::AsyncCopy& c) const {
  llvm::IRBuilder<>& b = e.builder();
  using Step = cir::AsyncCopy::Step;
  if (c.step == Step::Commit) {
    b.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {}, {});
    return;
  }
  if (c.step == Step::Wait) {
    b.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {}, {b.getInt32(static_cast<uint32_t>(c.pending))});
    return;
  }
  const Emitter::Buffer& dst = e.buffer(c.dst);
  const Emitter::Buffer& src = e.buffer(c.src);
  llvm::Type* i64 = b.getInt64Ty();
  int64_t size = static_cast<int64_t>(dtype_size(src.type.dtype)), bytes = c.count * size;
  llvm::Value* count = b.getInt64(c.count);
  llvm::Value* at = b.CreateSExt(e.expr(c.dst_index), i64);
  llvm::Value* valid = b.CreateSExt(e.expr(c.valid), i64);
  llvm::Value* dst_size = b.getInt64(1);
  for (const cir::Expr& d : dst.type.shape) dst_size = b.CreateMul(dst_size, b.CreateSExt(e.expr(d), i64));
  llvm::Value* ok = b.CreateAnd(b.CreateICmpULE(valid, count),
                                 b.CreateAnd(b.CreateICmpSGE(at, b.getInt64(0)), b.CreateICmpSLE(b.CreateAdd(at, count), dst_size)));
  // The run's first element and, along the last axis, its last one read.
  llvm::Value* offset = b.getInt64(0);
  llvm::Value* in_bounds = b.getTrue();
  for (size_t a = 0; a < c.src_index.size(); ++a) {
    llvm::Value* extent = b.CreateSExt(e.expr(src.type.shape[a]), i64);
    llvm::Value* idx = b.CreateSExt(e.expr(c.src_index[a]), i64);
    llvm::Value* last = a + 1 == c.src_index.size() ? b.CreateSub(b.CreateAdd(idx, valid), b.getInt64(1)) : idx;
    in_bounds = b.CreateAnd(in_bounds, b.CreateAnd(b.CreateICmpULT(idx, extent), b.CreateICmpULT(last, extent)));
    offset = b.CreateAdd(b.CreateMul(offset, extent), idx);
  }
  llvm::Value* reads = b.CreateICmpSGT(valid, b.getInt64(0));
  e.check(b.CreateAnd(ok, b.CreateOr(b.CreateNot(reads), in_bounds)), c.span, "async_copy out of the bounds of " + c.src + " or " + c.dst);
  llvm::Value* to = e.element_ptr(dst, at);
  llvm::Value* from = b.CreateSelect(reads, e.element_ptr(src, offset), src.ptr);
  llvm::Value* src_bytes = b.CreateTrunc(b.CreateMul(b.CreateSelect(reads, valid, b.getInt64(0)), b.getInt64(size)), b.getInt32Ty());
  llvm::Intrinsic::ID id = bytes == 16 ? llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16_s
                           : bytes == 8 ? llvm::Intrinsic::nvvm_cp_async_ca_shared_global_8_s
                                        : llvm::Intrinsic::nvvm_cp_async_ca_shared_global_4_s;
  b.CreateIntrinsic(id, {}, {to, from, src_bytes});
}

// zyntax_rt_ipow for the GPU, where the runtime's is not callable.
llvm::FunctionCallee NvptxLlvmTarget::integer_power(Emitter& e, llvm::FunctionType* type) const { return integer_power_function(e.module(), type); }

llvm::Value* NvptxLlvmTarget::bf16_rounded(llvm::IRBuilder<>& b, llvm::Value* f) const {
  std::optional<NvptxArch> arch = parse_nvptx_arch(target_.arch);
  if (!arch || arch->capability < 80) return nullptr;  // LLVM writes it out before sm_80
  return b.CreateBitCast(b.CreateFPTrunc(f, b.getBFloatTy()), b.getInt16Ty());
}

}  // namespace zyntax::codegen
