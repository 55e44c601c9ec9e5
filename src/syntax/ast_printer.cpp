#include "syntax/ast_printer.hpp"

#include <sstream>

#include "support/scalar.hpp"

namespace zyntax {

namespace {

using namespace ast;

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

class Printer {
 public:
  std::string module(const Module& m) {
    os_ << "(module";
    block_items(m.body, 1);
    os_ << ")\n";
    return os_.str();
  }

  std::string expr(const Expr& e) {
    print(e);
    return os_.str();
  }

 private:
  void newline(int depth) { os_ << "\n" << std::string(static_cast<size_t>(depth) * 2, ' '); }

  void block_items(const Block& b, int depth) {
    for (const StmtPtr& s : b.stmts) {
      newline(depth);
      stmt(*s, depth);
    }
  }

  void type(const TypeExpr& t) {
    os_ << t.name;
    if (!t.dims.empty() || !t.dtype.empty() || !t.params.empty()) {
      os_ << "[";
      bool first = true;
      for (const ExprPtr& d : t.dims) {
        if (!first) os_ << ", ";
        first = false;
        print(*d);
      }
      for (const auto& p : t.params) {
        if (!first) os_ << ", ";
        first = false;
        type(*p);
      }
      if (!t.dtype.empty()) os_ << (first ? "" : ", ") << t.dtype;
      os_ << "]";
    }
  }

  void annotation(const Annotation& a) {
    os_ << "(@" << a.name;
    if (!a.word.empty()) os_ << " " << a.word;
    for (const AnnotationArg& arg : a.args) {
      os_ << " ";
      if (!arg.name.empty()) os_ << arg.name << "=";
      if (!arg.op.empty())
        os_ << arg.op;
      else
        print(*arg.value);
    }
    os_ << ")";
  }

  void stmt(const Stmt& s, int depth) {
    depth_hint_ = depth;
    switch (s.kind) {
      case StmtKind::Let: {
        const auto& l = as<Let>(s);
        os_ << "(" << (l.is_var ? "var" : l.is_mutable ? "let mut" : "let") << " ";
        if (l.destructure) os_ << "(";
        for (size_t i = 0; i < l.names.size(); ++i) os_ << (i ? " " : "") << l.names[i];
        if (l.destructure) os_ << ")";
        if (l.type) {
          os_ << " : ";
          type(*l.type);
        }
        if (l.init) {
          os_ << " ";
          print(*l.init);
        }
        os_ << ")";
        break;
      }
      case StmtKind::Assign: {
        const auto& a = as<Assign>(s);
        static const char* kOps[] = {"=", "+=", "-=", "*=", "/="};
        os_ << "(" << kOps[static_cast<int>(a.op)] << " ";
        print(*a.target);
        os_ << " ";
        print(*a.value);
        os_ << ")";
        break;
      }
      case StmtKind::ExprStmt: print(*as<ExprStmt>(s).expr); break;
      case StmtKind::If: {
        const auto& i = as<If>(s);
        os_ << "(if ";
        print(*i.cond);
        newline(depth + 1);
        os_ << "(then";
        block_items(i.then_body, depth + 2);
        os_ << ")";
        if (i.has_else) {
          newline(depth + 1);
          os_ << "(else";
          block_items(i.else_body, depth + 2);
          os_ << ")";
        }
        os_ << ")";
        break;
      }
      case StmtKind::For: {
        const auto& f = as<For>(s);
        os_ << "(for";
        for (const ForRange& r : f.ranges) {
          os_ << " (" << r.var << " ";
          if (r.hi) {
            print(*r.lo);
            os_ << " ";
            print(*r.hi);
            if (r.step) {
              os_ << " step ";
              print(*r.step);
            }
          } else {
            os_ << "in ";
            print(*r.iterable);
          }
          os_ << ")";
        }
        block_items(f.body, depth + 1);
        os_ << ")";
        break;
      }
      case StmtKind::While: {
        const auto& w = as<While>(s);
        os_ << "(while ";
        print(*w.cond);
        block_items(w.body, depth + 1);
        os_ << ")";
        break;
      }
      case StmtKind::Return: {
        const auto& r = as<Return>(s);
        os_ << "(return";
        if (r.value) {
          os_ << " ";
          print(*r.value);
        }
        os_ << ")";
        break;
      }
      case StmtKind::Break: os_ << "(break)"; break;
      case StmtKind::Continue: os_ << "(continue)"; break;
      case StmtKind::FuncDef: {
        const auto& f = as<FuncDef>(s);
        static const char* kKinds[] = {"def", "fn", "pipeline"};
        os_ << "(" << kKinds[static_cast<int>(f.func_kind)] << " " << f.name << " (";
        for (size_t i = 0; i < f.params.size(); ++i) {
          const Param& p = f.params[i];
          os_ << (i ? " " : "") << p.name;
          if (p.type) {
            os_ << ":";
            type(*p.type);
          }
          if (p.default_value) {
            os_ << "=";
            print(*p.default_value);
          }
        }
        os_ << ")";
        if (f.return_type) {
          os_ << " -> ";
          type(*f.return_type);
        }
        block_items(f.body, depth + 1);
        os_ << ")";
        break;
      }
      case StmtKind::Import: {
        const auto& i = as<Import>(s);
        os_ << "(import " << (i.quoted ? quote(i.path) : i.path);
        if (!i.alias.empty()) os_ << " as " << i.alias;
        os_ << ")";
        break;
      }
      case StmtKind::Config: {
        const auto& c = as<Config>(s);
        os_ << "(config";
        for (const RecordField& f : c.entries) {
          os_ << " " << f.name << "=";
          print(*f.value);
        }
        os_ << ")";
        break;
      }
      case StmtKind::Yield:
        os_ << "(yield ";
        print(*as<Yield>(s).value);
        os_ << ")";
        break;
      case StmtKind::SharedVar: {
        const auto& v = as<SharedVar>(s);
        os_ << "(shared " << v.name;
        for (const ExprPtr& d : v.dims) {
          os_ << " ";
          print(*d);
        }
        if (!v.dtype.empty()) os_ << " : " << v.dtype;
        os_ << ")";
        break;
      }
      case StmtKind::Annotation: annotation(as<AnnotationStmt>(s).annotation); break;
      case StmtKind::BlockStmt:
        os_ << "(block";
        block_items(as<BlockStmt>(s).block, depth + 1);
        os_ << ")";
        break;
    }
  }

  void print(const Expr& e) {
    switch (e.kind) {
      case ExprKind::IntLit:
        os_ << as<IntLit>(e).value << as<IntLit>(e).unit;
        break;
      case ExprKind::FloatLit: os_ << Scalar::of_float(as<FloatLit>(e).value, DType::F64).str(); break;
      case ExprKind::StringLit: os_ << quote(as<StringLit>(e).value); break;
      case ExprKind::BoolLit: os_ << (as<BoolLit>(e).value ? "true" : "false"); break;
      case ExprKind::NoneLit: os_ << "none"; break;
      case ExprKind::Name: os_ << as<Name>(e).name; break;
      case ExprKind::Unary: {
        const auto& u = as<Unary>(e);
        os_ << "(" << (u.op == UnOp::Neg ? "-" : u.op == UnOp::Pos ? "+" : "not") << " ";
        print(*u.operand);
        os_ << ")";
        break;
      }
      case ExprKind::Binary: {
        const auto& b = as<Binary>(e);
        os_ << "(" << binop_text(b.op) << " ";
        print(*b.lhs);
        os_ << " ";
        print(*b.rhs);
        os_ << ")";
        break;
      }
      case ExprKind::Call: {
        const auto& c = as<Call>(e);
        os_ << "(call ";
        print(*c.callee);
        for (const Arg& a : c.args) {
          os_ << " ";
          if (!a.name.empty()) os_ << a.name << "=";
          print(*a.value);
        }
        os_ << ")";
        break;
      }
      case ExprKind::Index: {
        const auto& x = as<Index>(e);
        os_ << "(index ";
        print(*x.base);
        for (const IndexItem& it : x.items) {
          os_ << " ";
          if (!it.is_slice) {
            print(*it.index);
            continue;
          }
          os_ << "(slice ";
          if (it.lo) print(*it.lo); else os_ << "_";
          os_ << " ";
          if (it.hi) print(*it.hi); else os_ << "_";
          os_ << ")";
        }
        os_ << ")";
        break;
      }
      case ExprKind::Field: {
        const auto& f = as<Field>(e);
        os_ << "(. ";
        print(*f.base);
        os_ << " " << f.field << ")";
        break;
      }
      case ExprKind::Tuple:
      case ExprKind::List: {
        const auto& elems = e.kind == ExprKind::Tuple ? as<Tuple>(e).elems : as<List>(e).elems;
        os_ << (e.kind == ExprKind::Tuple ? "(tuple" : "(list");
        for (const ExprPtr& x : elems) {
          os_ << " ";
          print(*x);
        }
        os_ << ")";
        break;
      }
      case ExprKind::Record: {
        os_ << "(record";
        for (const RecordField& f : as<Record>(e).fields) {
          os_ << " " << f.name << "=";
          print(*f.value);
        }
        os_ << ")";
        break;
      }
      case ExprKind::Compute: {
        const auto& c = as<Compute>(e);
        os_ << "(compute (inputs";
        for (const ExprPtr& x : c.inputs) {
          os_ << " ";
          print(*x);
        }
        os_ << ")";
        for (const Annotation& a : c.header) {
          os_ << " ";
          annotation(a);
        }
        int depth = depth_hint_ + 1;
        block_items(*c.body, depth);
        os_ << ")";
        break;
      }
      case ExprKind::Await: {
        const auto& a = as<Await>(e);
        os_ << "(await ";
        print(*a.value);
        if (a.timeout) {
          os_ << " timeout ";
          print(*a.timeout);
          os_ << " else ";
          print(*a.fallback);
        }
        os_ << ")";
        break;
      }
    }
  }

  std::ostringstream os_;
  int depth_hint_ = 1;
};

}  // namespace

std::string print_ast(const ast::Module& m) { return Printer().module(m); }
std::string print_expr(const ast::Expr& e) { return Printer().expr(e); }

}  // namespace zyntax
