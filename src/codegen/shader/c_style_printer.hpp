// What the C-like shading languages (GLSL, MSL) write alike, between the
// shader printer's walk and each dialect: typed storage (elements in their
// memory type, converted to and from register values), integer arithmetic
// wrapped into narrow types, f16/bf16 rounding after every operation,
// NaN-propagating min/max, checked integer division, atomics by
// compare-and-swap of an element's bits (of the 32-bit word around a 1- or
// 2-byte one), argmin/argmax and folded yields into typed reduce buffers,
// and block reductions over subgroup shuffles. A dialect spells types,
// bit casts, builtins, barriers and atomics.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "codegen/shader/shader_printer.hpp"

namespace zyntax::codegen {

// A loop's trip count where its bounds and step are constants.
std::optional<int64_t> constant_trips(const cir::For& f);
// Whether a loop a schedule marks unrolled is written out whole (a
// constant trip count of at most 64).
bool unrolled_whole(const cir::For& f);

class CStylePrinter : public ShaderPrinter {
 public:
  CStylePrinter(const cir::Kernel& k, int threads, bool subgroup_shuffles)
      : ShaderPrinter(k, threads), subgroup_shuffles_(subgroup_shuffles) {}

 protected:
  // ---------------------------------------------------------- spellings

  virtual std::string reg_type(DType t) const = 0;  // a value in registers
  virtual std::string mem_type(DType t) const = 0;  // an element of a bound tensor
  virtual std::string bits_type(DType t) const = 0;  // an element's bits, for atomics
  virtual std::string bits_to_float(const std::string& bits) = 0;
  virtual std::string float_to_bits(const std::string& f) = 0;
  virtual std::string half_to_float(const std::string& bits) = 0;  // an f16 element's bits
  virtual std::string float_to_half(const std::string& f) = 0;     // the f16 element, rounded
  virtual std::string sign_extend(const std::string& v, int bits) = 0;
  // prev = the element's bits at `target` before an exchange of `seen` for `next`.
  virtual std::string compare_swap(const std::string& type, const std::string& prev, const std::string& target, const std::string& seen,
                                   const std::string& next) = 0;
  // An atomic add, min, max or exchange (`op`) of x into element `off` of `b`.
  virtual std::string fetch_op(const char* op, const Buffer& b, const std::string& off, const std::string& x) = 0;
  virtual std::string shuffle(const std::string& word, const std::string& offset) = 0;
  virtual std::string atomic_read(const std::string& target) { return target; }  // a word other invocations may change
  // The bits of an f64 value and back (atomics on f64 elements).
  virtual std::string double_from_bits(const std::string&) { unsupported("f64 atomics"); }
  virtual std::string double_to_bits(const std::string&) { unsupported("f64 atomics"); }
  virtual std::string inout_bool(const std::string& name) = 0;  // a parameter the callee sets
  virtual std::string round_even() = 0;  // the builtin rounding half to even
  virtual std::string one(DType t) = 0;   // the float literal 1
  virtual std::string unroll_prefix() = 0;

  std::string type_name(DType t) const override { return reg_type(t); }
  std::string guarded(const std::string& cond, const std::string& statement) override { return "if (" + cond + ") " + statement; }

  // ---------------------------------------------------------- values

  // An integer result of a narrow dtype wrapped back into its range.
  std::string wrap(DType t, const std::string& v);
  std::string from_memory(DType t, const std::string& v);
  std::string to_memory(DType t, const std::string& v);
  std::string int_constant(int64_t v, DType t) override;
  std::string select(const std::string& c, const std::string& x, const std::string& y) override { return c + " ? " + x + " : " + y; }
  std::string bool_to_int(const std::string& v) override { return "int(" + v + ")"; }
  std::string float_min_max(bool is_min, DType t, const std::string& a, const std::string& c) override;
  // Integers of dtype t from a + c, a - c, a * c and -a, wrapping.
  virtual std::string wrapping(BinaryOp op, DType t, const std::string& a, const std::string& c) { return wrap(t, a + binary_symbol(op) + c); }
  virtual std::string wrapping_negation(DType t, const std::string& a) { return wrap(t, "-(" + a + ")"); }
  // a - q * d, wrapping (the remainder of a truncating division).
  virtual std::string remainder(DType t, const std::string& a, const std::string& q, const std::string& d) {
    return wrap(t, a + " - " + q + " * " + d);
  }
  static std::string binary_symbol(BinaryOp op);
  std::string negate(DType t, const std::string& a, Span) override;
  // Integer to integer: widened by the source's signedness, narrowed by wrapping.
  std::string integer_convert(const std::string& v, DType from, DType to);
  std::string arith(BinaryOp op, DType t, const std::string& a, const std::string& c, Span span) override;
  // f32 (or f64) remainders and powers, the dialect's way.
  virtual std::string float_mod(DType t, const std::string& a, const std::string& c) = 0;
  virtual std::string float_pow(DType t, const std::string& a, const std::string& c) = 0;
  // Math functions of integers, and those of floats the language has built in.
  std::string integer_math(const cir::Math& m, const std::vector<std::string>& args);
  std::optional<std::string> builtin_float_math(MathFn fn, DType t, const std::vector<std::string>& args);
  // Calls a helper of codegen/shader/f32_math.
  std::string library(const char* fn, const std::string& args);

  // ---------------------------------------------------------- memory and indices

  std::string load(const Buffer& b, const std::string& off, Span) override { return from_memory(b.type.dtype, b.name + "[" + off + "]"); }
  void store(const Buffer& b, const std::string& off, const std::string& ok, const std::string& v) override {
    line("if (" + ok + ") " + b.name + "[" + off + "] = " + (b.tensor ? to_memory(b.type.dtype, v) : v) + ";");
  }
  std::string index_value(const std::string& v) override { return reg_type(DType::I64) + "(" + v + ")"; }
  std::string index_literal(int64_t v) override { return std::to_string(v) + "l"; }
  std::string axis_extent(const std::string& v) override { return index_value(v); }
  std::string axis_index(const std::string& v) override { return temp(DType::I64, index_value(v)); }
  std::string in_bounds(const std::string& i, const std::string& extent) override {
    return reg_type(DType::U64) + "(" + i + ") < " + reg_type(DType::U64) + "(" + extent + ")";
  }
  std::string offset_origin() override { return "0l"; }
  // Buffers hold fewer than 2^32 elements.
  std::string guarded_offset(const std::string& ok, const std::string& offset) override { return temp(DType::U32, ok + " ? uint(" + offset + ") : 0u"); }

  // ---------------------------------------------------------- loops

  // (hi - lo - 1) / step + 1 unsigned: exact where hi - lo + step - 1 would overflow.
  std::string trip_count(const std::string& lo, const std::string& hi, const std::string& step, const std::string& runs) override;
  // Where an invocation starts and its stride, from the builtins.
  std::pair<std::string, std::string> loop_start(Stride how) override;
  virtual std::string global_id(char axis) = 0;
  virtual std::string group_count(char axis) = 0;
  virtual std::string group_id(char axis) = 0;
  // Loops of more iterations than this (0: no limit) run as chunks of it.
  virtual int64_t loop_limit() const { return 0; }
  LoopHeader loop_header(const cir::For& f, Stride how, const std::string& trips, const std::string& first, const std::string& stride) override;
  std::string loop_variable(const std::string& lo, const std::string& k, const std::string& step) override { return lo + " + " + k + " * " + step; }
  bool unrolled_ = false;  // a loop is unrolled whole

  // ---------------------------------------------------------- arrays

  std::string local_array(DType t, const std::string& name, uint64_t n) override { return reg_type(t) + " " + name + "[" + std::to_string(n) + "];"; }
  void zero_fill(DType t, const std::string& name, uint64_t n) override;

  // ---------------------------------------------------------- reductions and atomics

  template <class Update>
  void cas_update(DType t, const Buffer& b, const std::string& off, Update update);
  template <class Update>
  void narrow_cas_update(DType t, const Buffer& b, const std::string& off, Update update);
  void yield_arg(const cir::Yield& y, const std::string& off, const std::string& v) override;
  void yield_fold(const cir::Yield& y, const std::string& off, const std::string& v) override;
  void atomic_update(const cir::Atomic& a, const Buffer& b, const std::string& off, const std::string& x) override;

  std::string block_count(const std::string& count) override { return temp(DType::I64, index_value(count)); }
  std::string block_loop(const std::string& i, const std::string& count) override {
    std::string index = reg_type(DType::I64);
    return "for (" + index + " " + i + " = " + index + "(" + local_id() + "); " + i + " < " + count + "; " + i + " += " + index + "(" +
           workgroup_size() + ")) {";
  }
  std::string array_at(const std::string& array, const std::string& i) override { return array + "[uint(" + i + ")]"; }
  std::string halving_loop(const std::string& s, int half) override {
    return "for (uint " + s + " = " + std::to_string(half) + "u; " + s + " > 0u; " + s + " >>= 1) {";
  }
  // Its own array beside the subgroups' scratch.
  std::string tree_scratch(DType t, const std::string& scratch) override {
    shared_array(t, scratch + "_all", static_cast<uint64_t>(threads_));
    return scratch + "_all";
  }
  bool has_shuffles() const override { return subgroup_shuffles_; }
  virtual std::string subgroup_size() = 0;
  virtual std::string subgroup_count() = 0;
  std::string subgroup_halving_loop(const std::string& o) override {
    return "for (uint " + o + " = " + subgroup_size() + " / 2u; " + o + " >= 1u; " + o + " /= 2u) {";
  }
  std::string subgroup_loop(const std::string& w) override { return "for (uint " + w + " = 0u; " + w + " < " + subgroup_count() + "; ++" + w + ")"; }
  // A value of every lane, exchanged with the lane whose index differs in
  // `offset`'s bit: 32-bit words, 64-bit values as two halves, narrower
  // ones widened.
  std::string shuffle_xor(const std::string& v, DType t, const std::string& offset) override;
  virtual std::string shuffle_double(const std::string&, const std::string&) { unsupported("f64 shuffles"); }

  // Helper functions both languages spell alike but for their types and
  // bit casts: bf16 rounding, IEEE minimum/maximum, integer powers.
  std::string bf16_helper();
  std::string min_max_helper(const std::string& type, const std::string& to_bits, const std::string& from_bits, const std::string& zero);
  std::string ipow_helper();

  bool subgroup_shuffles_;
};

}  // namespace zyntax::codegen
