#include "sema/kernel_annotations.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "support/nearest_name.hpp"

namespace zyntax {

namespace {

const char* kKernelKinds =
    "elementwise, reduce(op[, axis=k]), matmul, batched_matmul, conv2d, conv2d_depthwise, attention, "
    "flash_attention, fused";
const char* kAnnotations = "@kernel, @workgroup, @shared, @broadcast, @tile, @device, @parallel, @precision, @async";
const std::vector<std::string> kKernelKindNames = {"elementwise", "reduce", "matmul", "batched_matmul", "conv2d",
                                                   "conv2d_depthwise", "attention", "flash_attention", "fused"};
const std::vector<std::string> kAnnotationNames = {"kernel", "workgroup", "shared", "broadcast", "tile",
                                                   "device", "parallel", "precision", "async"};

// "did you mean 'elementwise'? (one of ...)" or just "one of ...".
std::string suggestion(const std::string& word, const std::vector<std::string>& names, const std::string& all,
                       const std::string& prefix = "") {
  std::string near = nearest_name(word, names);
  return near.empty() ? all : "did you mean '" + prefix + near + "'? (" + all + ")";
}

class Reader {
 public:
  Reader(DiagnosticEngine& diags) : diags_(diags) {}

  KernelAnnotations read(const ast::Compute& c) {
    for (const ast::Annotation& a : c.header) one(a, /*in_header=*/true);
    for (const ast::StmtPtr& s : c.body->stmts)
      if (s->kind == ast::StmtKind::Annotation) one(ast::as<ast::AnnotationStmt>(*s).annotation, false);
    return out_;
  }

 private:
  bool seen(const ast::Annotation& a) {
    auto it = first_.find(a.name);
    if (it == first_.end()) {
      first_[a.name] = a.span;
      return false;
    }
    diags_.error(a.span, "duplicate @" + a.name + " annotation").note(it->second, "first given here");
    return true;
  }

  void one(const ast::Annotation& a, bool in_header) {
    if (a.name == "kernel") return kernel(a);
    if (a.name == "workgroup") return workgroup(a);
    if (a.name == "shared") {
      if (seen(a)) return;
      if (a.args.size() != 1 || !a.args[0].value || !a.args[0].name.empty()) {
        diags_.error(a.span, "@shared takes one argument: the shared memory size in bytes");
        return;
      }
      if (std::optional<int64_t> bytes = constant_int(*a.args[0].value); bytes && *bytes < 0) {
        diags_.error(a.args[0].span, "@shared size is " + std::to_string(*bytes) + " bytes: a size is 0 or more");
        return;
      }
      out_.shared_bytes = a.args[0].value.get();
      return;
    }
    if (a.name == "broadcast") return broadcast(a);
    if (a.name == "tile") return tile(a);
    if (a.name == "device") return device(a);
    if (a.name == "parallel") {
      if (seen(a)) return;
      auto word = [&](size_t i) {
        return i < a.args.size() && a.args[i].name.empty() && a.args[i].value && a.args[i].value->kind == ast::ExprKind::Name
                   ? ast::as<ast::Name>(*a.args[i].value).name
                   : std::string();
      };
      if (a.args.empty() || a.args.size() > 2 || word(0).empty() || (a.args.size() == 2 && word(1).empty())) {
        diags_.error(a.span, "@parallel takes a word, and `ranks` to share over processes: @parallel(data), @parallel(model) or @parallel(data, ranks)");
        return;
      }
      out_.parallel = word(0);
      if (out_.parallel != "data" && out_.parallel != "model")
        diags_.error(a.args[0].span, "unknown parallel mode '" + out_.parallel + "'").with_hint("use data or model");
      if (a.args.size() == 2) {
        if (word(1) != "ranks")
          diags_.error(a.args[1].span, "@parallel's second word is `ranks` (the processes of an mpirun job), not '" + word(1) + "'");
        out_.over_ranks = true;
      }
      return;
    }
    if (a.name == "precision") {
      if (seen(a)) return;
      const ast::AnnotationArg* arg = a.args.size() == 1 && a.args[0].name.empty() ? &a.args[0] : nullptr;
      std::string word = arg && arg->value && arg->value->kind == ast::ExprKind::Name ? ast::as<ast::Name>(*arg->value).name : "";
      if (word == "tf32" || word == "f32" || word == "bf16") {
        // bf16 (8 mantissa bits) permits everything TF32 (10) does.
        out_.tf32 = word != "f32";
        out_.bf16 = word == "bf16";
        return;
      }
      diags_.error(arg ? arg->span : a.span, "@precision takes one word: tf32, bf16 or f32")
          .with_hint("@precision(tf32) lets f32 products round their factors to TF32 on tensor cores; @precision(bf16) to bf16");
      return;
    }
    if (a.name == "async") {
      if (seen(a)) return;
      if (!in_header) diags_.error(a.span, "@async belongs after compute(...), before '{'");
      if (a.has_args) diags_.error(a.span, "@async takes no arguments");
      out_.is_async = true;
      return;
    }
    diags_.error(a.name_span, "unknown annotation '@" + a.name + "'")
        .with_hint(suggestion(a.name, kAnnotationNames, std::string("known: ") + kAnnotations, "@"));
  }

  void kernel(const ast::Annotation& a) {
    if (seen(a)) return;
    auto kind = cir::parse_kernel_kind(a.word);
    if (!kind) {
      diags_.error(a.word_span, "unknown kernel type '" + a.word + "'")
          .with_hint(suggestion(a.word, kKernelKindNames, std::string("one of ") + kKernelKinds));
      return;
    }
    out_.kind = *kind;
    out_.kind_span = a.span;
    if (*kind == cir::KernelKind::Reduce) {
      if (a.args.empty()) {
        diags_.error(a.span, "@kernel reduce needs an operator").with_hint("write reduce(+), reduce(max), reduce(argmax), ...");
        return;
      }
      const ast::AnnotationArg& op = a.args[0];
      std::string text = op.op;
      if (text.empty() && op.value && op.value->kind == ast::ExprKind::Name && op.name.empty())
        text = ast::as<ast::Name>(*op.value).name;
      auto parsed = parse_reduce_op(text);
      if (!parsed) {
        diags_.error(op.span, "unknown reduction operator '" + text + "'")
            .with_hint("one of +, *, min, max, and, or, argmin, argmax");
      } else {
        out_.reduce_op = *parsed;
      }
      if (a.args.size() > 2) diags_.error(a.args[2].span, "reduce takes an operator and at most an axis: reduce(+, axis=1)");
      if (a.args.size() >= 2) {
        const ast::AnnotationArg& arg = a.args[1];
        // Negative axes count from the last loop around the yield, as in NumPy.
        std::optional<int64_t> axis = arg.value ? constant_int(*arg.value) : std::nullopt;
        if (arg.name != "axis" || !axis || *axis < -64 || *axis > 63)
          diags_.error(arg.span, "reduce's second argument is axis=k with a constant k (negative counts from the innermost loop)")
              .with_hint("reduce(+, axis=1) reduces the second loop around the yield; reduce(+, axis=-1) the innermost");
        else
          out_.reduce_axis = static_cast<int>(*axis);
      }
      return;
    }
    // The body says what every other kind computes: a parameter such as
    // conv2d(stride=2) would be a second, unchecked statement of it.
    if (!a.args.empty())
      diags_.error(a.span, "@kernel " + a.word + " takes no parameters")
          .with_hint("the body says what is computed: write strides, padding and scales in its indexing and arithmetic");
  }

  void workgroup(const ast::Annotation& a) {
    if (seen(a)) return;
    if (a.args.empty() || a.args.size() > 3) {
      diags_.error(a.span, "@workgroup takes one to three sizes: @workgroup(x[, y[, z]])");
      return;
    }
    std::array<int64_t, 3> size{1, 1, 1};
    for (size_t i = 0; i < a.args.size(); ++i) {
      std::optional<int64_t> v = a.args[i].value ? constant_int(*a.args[i].value) : std::nullopt;
      if (!v || *v <= 0 || *v > 1024) {
        diags_.error(a.args[i].span, "workgroup size must be a constant between 1 and 1024");
        return;
      }
      size[i] = *v;
    }
    if (size[0] * size[1] * size[2] > 1024)
      diags_.error(a.span, "workgroup has " + std::to_string(size[0] * size[1] * size[2]) +
                               " threads; at most 1024 are allowed");
    out_.workgroup = size;
  }

  void broadcast(const ast::Annotation& a) {
    if (a.args.size() != 2 || !a.args[0].value || a.args[1].name != "axis") {
      diags_.error(a.span, "@broadcast takes an input and an axis: @broadcast(vector, axis=1)");
      return;
    }
    std::string input = ast::path_text(*a.args[0].value);
    std::optional<int64_t> axis = constant_int(*a.args[1].value);
    if (input.empty() || !axis || *axis < 0) {
      diags_.error(a.span, "@broadcast takes an input name and a constant axis >= 0");
      return;
    }
    out_.broadcast.push_back({input, static_cast<int>(*axis), a.span});
  }

  void tile(const ast::Annotation& a) {
    if (seen(a)) return;
    for (const ast::AnnotationArg& arg : a.args) {
      std::optional<int64_t> v = arg.value ? constant_int(*arg.value) : std::nullopt;
      if (arg.name.empty() || !v || *v <= 0) {
        diags_.error(arg.span, "@tile takes name=size pairs with constant sizes > 0: @tile(block_q=64)");
        continue;
      }
      out_.tile[arg.name] = *v;
    }
  }

  void device(const ast::Annotation& a) {
    if (seen(a)) return;
    out_.device_span = a.span;
    auto add = [&](const ast::Expr& e) {
      if (e.kind != ast::ExprKind::StringLit) {
        diags_.error(e.span, "@device takes a device name in quotes: @device(\"cuda:0\")");
        return;
      }
      const std::string& name = ast::as<ast::StringLit>(e).value;
      if (name.empty()) {
        diags_.error(e.span, "@device names a device: \"\" is none").with_hint("\"auto\", \"cpu\", \"cuda:0\", \"vulkan:0\", ... (`zyntax devices` lists them)");
        return;
      }
      out_.devices.push_back(name);
    };
    if (a.args.size() != 1 || !a.args[0].value) {
      diags_.error(a.span, "@device takes one device name or a list of them");
      return;
    }
    const ast::Expr& v = *a.args[0].value;
    if (v.kind == ast::ExprKind::List) {
      if (ast::as<ast::List>(v).elems.empty()) diags_.error(v.span, "@device([]) names no device").with_hint("name one or more: @device([\"cpu:0\", \"cpu:1\"])");
      for (const ast::ExprPtr& e : ast::as<ast::List>(v).elems) add(*e);
    } else {
      add(v);
    }
  }

  DiagnosticEngine& diags_;
  KernelAnnotations out_;
  std::map<std::string, Span> first_;
};

}  // namespace

KernelAnnotations read_kernel_annotations(const ast::Compute& c, DiagnosticEngine& diags) {
  return Reader(diags).read(c);
}

std::optional<int64_t> constant_int(const ast::Expr& e) {
  using namespace ast;
  switch (e.kind) {
    case ExprKind::IntLit: return as<IntLit>(e).unit.empty() ? std::optional<int64_t>(as<IntLit>(e).value) : std::nullopt;
    case ExprKind::Unary: {
      const auto& u = as<Unary>(e);
      auto v = constant_int(*u.operand);
      if (!v || u.op == UnOp::Not) return std::nullopt;
      if (u.op == UnOp::Neg && *v == INT64_MIN) return std::nullopt;
      return u.op == UnOp::Neg ? -*v : *v;
    }
    case ExprKind::Binary: {
      const auto& b = as<Binary>(e);
      auto x = constant_int(*b.lhs), y = constant_int(*b.rhs);
      if (!x || !y) return std::nullopt;
      int64_t r;
      switch (b.op) {
        case BinOp::Add: return __builtin_add_overflow(*x, *y, &r) ? std::nullopt : std::optional<int64_t>(r);
        case BinOp::Sub: return __builtin_sub_overflow(*x, *y, &r) ? std::nullopt : std::optional<int64_t>(r);
        case BinOp::Mul: return __builtin_mul_overflow(*x, *y, &r) ? std::nullopt : std::optional<int64_t>(r);
        case BinOp::Div:
        case BinOp::Mod:
          if (*y == 0 || (*y == -1 && *x == INT64_MIN)) return std::nullopt;
          return b.op == BinOp::Div ? *x / *y : *x % *y;
        default: return std::nullopt;
      }
    }
    default: return std::nullopt;
  }
}

}  // namespace zyntax
