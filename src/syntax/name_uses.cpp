#include "syntax/name_uses.hpp"

namespace zyntax::ast {

namespace {

class Counter {
 public:
  explicit Counter(const std::string& name) : name_(name) {}
  size_t count = 0;

  void expr(const ExprPtr& e) {
    if (e) expr(*e);
  }
  void expr(const Expr& e) {
    switch (e.kind) {
      case ExprKind::Name: count += as<Name>(e).name == name_; break;
      case ExprKind::Unary: expr(as<Unary>(e).operand); break;
      case ExprKind::Binary: expr(as<Binary>(e).lhs), expr(as<Binary>(e).rhs); break;
      case ExprKind::Call:
        expr(as<Call>(e).callee);
        for (const Arg& a : as<Call>(e).args) expr(a.value);
        break;
      case ExprKind::Index:
        expr(as<Index>(e).base);
        for (const IndexItem& i : as<Index>(e).items) expr(i.index), expr(i.lo), expr(i.hi);
        break;
      case ExprKind::Field: expr(as<Field>(e).base); break;
      case ExprKind::Tuple:
        for (const ExprPtr& x : as<Tuple>(e).elems) expr(x);
        break;
      case ExprKind::List:
        for (const ExprPtr& x : as<List>(e).elems) expr(x);
        break;
      case ExprKind::Record:
        for (const RecordField& f : as<Record>(e).fields) expr(f.value);
        break;
      case ExprKind::Compute: {
        const auto& c = as<Compute>(e);
        for (const ExprPtr& x : c.inputs) expr(x);
        for (const Annotation& a : c.header) annotation(a);
        if (c.body) block(*c.body);
        break;
      }
      case ExprKind::Await:
        expr(as<Await>(e).value), expr(as<Await>(e).timeout), expr(as<Await>(e).fallback);
        break;
      default: break;  // literals
    }
  }

  void type(const TypeExpr* t) {
    if (!t) return;
    for (const ExprPtr& d : t->dims) expr(d);
    for (const auto& p : t->params) type(p.get());
  }

  void annotation(const Annotation& a) {
    for (const AnnotationArg& arg : a.args) expr(arg.value);
  }

  void block(const Block& b) {
    for (const StmtPtr& s : b.stmts) stmt(*s);
  }

  void stmt(const Stmt& s) {
    switch (s.kind) {
      case StmtKind::Let: type(as<Let>(s).type.get()), expr(as<Let>(s).init); break;
      case StmtKind::Assign: expr(as<Assign>(s).target), expr(as<Assign>(s).value); break;
      case StmtKind::ExprStmt: expr(as<ExprStmt>(s).expr); break;
      case StmtKind::If: expr(as<If>(s).cond), block(as<If>(s).then_body), block(as<If>(s).else_body); break;
      case StmtKind::For:
        for (const ForRange& r : as<For>(s).ranges) expr(r.lo), expr(r.hi), expr(r.step), expr(r.iterable);
        block(as<For>(s).body);
        break;
      case StmtKind::While: expr(as<While>(s).cond), block(as<While>(s).body); break;
      case StmtKind::Return: expr(as<Return>(s).value); break;
      case StmtKind::FuncDef: {
        const auto& f = as<FuncDef>(s);
        for (const Param& p : f.params) type(p.type.get()), expr(p.default_value);
        type(f.return_type.get());
        block(f.body);
        break;
      }
      case StmtKind::Config:
        for (const RecordField& f : as<Config>(s).entries) expr(f.value);
        break;
      case StmtKind::Yield: expr(as<Yield>(s).value); break;
      case StmtKind::SharedVar:
        for (const ExprPtr& d : as<SharedVar>(s).dims) expr(d);
        break;
      case StmtKind::Annotation: annotation(as<AnnotationStmt>(s).annotation); break;
      case StmtKind::BlockStmt: block(as<BlockStmt>(s).block); break;
      default: break;  // break, continue, import
    }
  }

 private:
  const std::string& name_;
};

}  // namespace

size_t count_name_uses(const Block& b, const std::string& name) {
  Counter c(name);
  c.block(b);
  return c.count;
}

size_t count_name_uses(const Stmt& s, const std::string& name) {
  Counter c(name);
  c.stmt(s);
  return c.count;
}

}  // namespace zyntax::ast
