#include "syntax/ast.hpp"

namespace zyntax::ast {

const char* binop_text(BinOp op) {
  switch (op) {
    case BinOp::Add: return "+";
    case BinOp::Sub: return "-";
    case BinOp::Mul: return "*";
    case BinOp::Div: return "/";
    case BinOp::Mod: return "%";
    case BinOp::Pow: return "**";
    case BinOp::MatMul: return "@";
    case BinOp::Eq: return "==";
    case BinOp::Ne: return "!=";
    case BinOp::Lt: return "<";
    case BinOp::Le: return "<=";
    case BinOp::Gt: return ">";
    case BinOp::Ge: return ">=";
    case BinOp::And: return "and";
    case BinOp::Or: return "or";
  }
  return "?";
}

std::string path_text(const Expr& e) {
  if (e.kind == ExprKind::Name) return as<Name>(e).name;
  if (e.kind == ExprKind::Field) {
    std::string base = path_text(*as<Field>(e).base);
    return base.empty() ? "" : base + "." + as<Field>(e).field;
  }
  return "";
}

}  // namespace zyntax::ast
