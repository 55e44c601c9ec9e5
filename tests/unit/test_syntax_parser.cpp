// Parser: both block styles, the seed's syntax, and errors that point at the right place.
#include <gtest/gtest.h>

#include "support/diagnostics.hpp"
#include "syntax/ast_printer.hpp"
#include "syntax/parser.hpp"

namespace zyntax {
namespace {

struct Parsed {
  SourceManager sources;
  std::unique_ptr<DiagnosticEngine> diags;
  ast::Module module;
  std::string text() const { return print_ast(module); }
  std::string errors() const { return diags->render_all(); }
};

std::unique_ptr<Parsed> parse_text(const std::string& src) {
  auto p = std::make_unique<Parsed>();
  p->diags = std::make_unique<DiagnosticEngine>(p->sources);
  FileId id = p->sources.add("t.zynml", src);
  p->module = parse_file(p->sources, id, *p->diags);
  return p;
}

TEST(SyntaxParser, ColonAndBraceBlocksParseTheSame) {
  auto colon = parse_text("for i in 0..n:\n    out[i] = x[i] * 2.0\n    y += 1\n");
  auto brace = parse_text("for i in 0..n {\n    out[i] = x[i] * 2.0\n    y += 1\n}\n");
  ASSERT_FALSE(colon->diags->has_errors()) << colon->errors();
  ASSERT_FALSE(brace->diags->has_errors()) << brace->errors();
  EXPECT_EQ(colon->text(), brace->text());
  EXPECT_EQ(colon->text(), "(module\n  (for (i 0 n)\n    (= (index out i) (* (index x i) 2.0))\n    (+= y 1)))\n");
}

TEST(SyntaxParser, ComputeWithColonBodyInsideBraces) {
  auto p = parse_text(
      "let C = compute(A, B) @device(\"cpu\") {\n"
      "    @kernel matmul\n"
      "    @workgroup(16, 16)\n"
      "    for i in 0..M, j in 0..N:\n"
      "        var sum = 0.0\n"
      "        for k in 0..K:\n"
      "            sum += A[i, k] * B[k, j]\n"
      "        out[i, j] = sum\n"
      "}\n");
  ASSERT_FALSE(p->diags->has_errors()) << p->errors();
  EXPECT_EQ(p->text(),
            "(module\n  (let C (compute (inputs A B) (@device \"cpu\")\n    (@kernel matmul)\n    (@workgroup 16 16)\n"
            "    (for (i 0 M) (j 0 N)\n      (var sum 0.0)\n      (for (k 0 K)\n        (+= sum (* (index A i k) (index B k j))))\n"
            "      (= (index out i j) sum)))))\n");
}

TEST(SyntaxParser, VarIsContextual) {
  auto p = parse_text("var var = 0.0\nvar += d * d\nvar /= n\nlet r = rsqrt(var + eps)\n");
  ASSERT_FALSE(p->diags->has_errors()) << p->errors();
  EXPECT_EQ(p->text(), "(module\n  (var var 0.0)\n  (+= var (* d d))\n  (/= var n)\n  (let r (call rsqrt (+ var eps))))\n");
}

TEST(SyntaxParser, PipeSlicesStepsAndReduceOperators) {
  auto p = parse_text(
      "let n = compute(d) { @kernel reduce(+, axis=1)\n for i in 0..r, j in 0..c step 2: yield d[i, j] } |> sqrt()\n"
      "let k = K[b, h, kv:kv + 64]\nlet s = reduce(+, e)\nlet m = x |> f(y)\n");
  ASSERT_FALSE(p->diags->has_errors()) << p->errors();
  std::string t = p->text();
  EXPECT_NE(t.find("(let n (call sqrt (compute (inputs d)"), std::string::npos) << t;
  EXPECT_NE(t.find("(@kernel reduce + axis=1)"), std::string::npos) << t;
  EXPECT_NE(t.find("(j 0 c step 2)"), std::string::npos) << t;
  EXPECT_NE(t.find("(index K b h (slice kv (+ kv 64)))"), std::string::npos) << t;
  EXPECT_NE(t.find("(call reduce + e)"), std::string::npos) << t;
  EXPECT_NE(t.find("(call f x y)"), std::string::npos) << t;
}

TEST(SyntaxParser, IfElifElseBothStyles) {
  auto colon = parse_text("if a:\n    x = 1\nelif b:\n    x = 2\nelse:\n    x = 3\n");
  auto brace = parse_text("if a {\n    x = 1\n} else if b {\n    x = 2\n} else {\n    x = 3\n}\n");
  ASSERT_FALSE(colon->diags->has_errors()) << colon->errors();
  ASSERT_FALSE(brace->diags->has_errors()) << brace->errors();
  EXPECT_EQ(colon->text(), brace->text());
}

TEST(SyntaxParser, FunctionsTypesTuplesRecords) {
  auto p = parse_text(
      "pipeline block(x: tensor[batch, seq, hidden], layer: int) -> tensor[batch, seq, hidden]:\n"
      "    let (q, k, v) = split(x, 3, axis=-1)\n"
      "    let w = {a: 1, b: [2, 3]}\n"
      "    return w.a\n"
      "fn f(t: tensor[2, 3, f32]) { return t }\n"
      "import \"lib/util.zynml\" as util\n"
      "config { compute_device: \"cpu\" }\n");
  ASSERT_FALSE(p->diags->has_errors()) << p->errors();
  std::string t = p->text();
  EXPECT_NE(t.find("(pipeline block (x:tensor[batch, seq, hidden] layer:int) -> tensor[batch, seq, hidden]"),
            std::string::npos) << t;
  EXPECT_NE(t.find("(let (q k v) (call split x 3 axis=(- 1)))"), std::string::npos) << t;
  EXPECT_NE(t.find("(fn f (t:tensor[2, 3, f32])"), std::string::npos) << t;
  EXPECT_NE(t.find("(import \"lib/util.zynml\" as util)"), std::string::npos) << t;
  EXPECT_NE(t.find("(config compute_device=\"cpu\")"), std::string::npos) << t;
}

TEST(SyntaxParser, ErrorHasLineColumnAndCaret) {
  auto p = parse_text("let x = 1\nlet y = (2 +\n");
  ASSERT_TRUE(p->diags->has_errors());
  std::string e = p->errors();
  EXPECT_NE(e.find("t.zynml:2:"), std::string::npos) << e;
  EXPECT_NE(e.find("error:"), std::string::npos) << e;
  EXPECT_NE(e.find("^"), std::string::npos) << e;
}

TEST(SyntaxParser, SeveralErrorsInOneRun) {
  auto p = parse_text("let = 1\nlet ok = 2\nfor i in 0..n\n    x = 1\nlet s = \"abc\n");
  EXPECT_GE(p->diags->error_count(), 3u) << p->errors();
}

TEST(SyntaxParser, MissingIndentedBlock) {
  auto p = parse_text("for i in 0..n:\nx = 1\n");
  ASSERT_TRUE(p->diags->has_errors());
  EXPECT_NE(p->errors().find("expected an indented block"), std::string::npos) << p->errors();
}

TEST(SyntaxParser, DeepNestingIsAnErrorNotACrash) {
  auto p = parse_text("let x = " + std::string(100000, '(') + "1" + std::string(100000, ')') + "\n");
  ASSERT_TRUE(p->diags->has_errors());
  EXPECT_NE(p->errors().find("nesting is too deep"), std::string::npos);
}

TEST(SyntaxParser, BinaryJunkGivesBoundedErrors) {
  std::string junk;
  for (int i = 0; i < 20000; ++i) junk += static_cast<char>((i * 7919) % 256);
  auto p = parse_text(junk);
  EXPECT_TRUE(p->diags->has_errors());
  EXPECT_LE(p->diags->error_count(), DiagnosticEngine::kMaxErrors + 5);
}

TEST(SyntaxParser, ChainedComparisonsAreRejected) {
  auto p = parse_text("let b = 0 <= i < n\n");
  ASSERT_TRUE(p->diags->has_errors());
  EXPECT_NE(p->errors().find("comparisons cannot be chained"), std::string::npos);
}

}  // namespace
}  // namespace zyntax
