#include <gtest/gtest.h>

#include "models/seed.h"
#include "kiln.h"

using namespace kiln;

namespace {

// The seed's expression, shared with the apps.
Tensor seed_expression(const Tensor& x) { return models::compute_expression(x); }

Graph seed_graph() {
  CompileOptions o;
  o.input_names = {"x"};
  return trace([](const std::vector<Tensor>& in) { return std::vector<Tensor>{seed_expression(in[0])}; },
               {rand({5})}, o);
}

TEST(Graph, PrintsAnFxStyleListing) {
  EXPECT_EQ(seed_graph().str(),
            "graph(x: f32[5]):\n"
            "  %sin : f32[5] = sin(%x)\n"
            "  %exp : f32[5] = exp(%sin)\n"
            "  %cos : f32[5] = cos(%x)\n"
            "  %abs : f32[5] = abs(%cos)\n"
            "  %log : f32[5] = log(%abs)\n"
            "  %add : f32[5] = add(%exp, %log)\n"
            "  return (%add)\n");
}

TEST(Graph, UsersAndMetadata) {
  Graph g = seed_graph();
  ASSERT_EQ(g.inputs().size(), 1u);
  int x = g.inputs()[0];
  EXPECT_EQ(g.users(x).size(), 2u);  // sin and cos
  EXPECT_EQ(g.num_ops(), 6);
  EXPECT_EQ(g.output_metas()[0].str(), "f32[5]");
}

TEST(Graph, DotHasEveryNodeAndEdge) {
  std::string dot = seed_graph().to_dot("seed");
  EXPECT_EQ(dot.rfind("digraph \"seed\" {", 0), 0u);
  for (const char* s : {"sin", "cos", "abs", "log", "exp", "add", "n0 -> n1", "-> out0"}) {
    EXPECT_NE(dot.find(s), std::string::npos) << s;
  }
  EXPECT_EQ(dot.back(), '\n');
  size_t edges = 0;
  for (size_t p = dot.find("->"); p != std::string::npos; p = dot.find("->", p + 1)) ++edges;
  EXPECT_EQ(edges, 8u);  // 7 data edges + 1 output edge
}

TEST(Graph, ScalarsAttributesAndConstants) {
  Tensor w = from_vector(std::vector<float>{1, 2, 3}, {3});
  Graph g = trace([&](const std::vector<Tensor>& in) {
                    return std::vector<Tensor>{sum(in[0] * 2.0 + w, {0}, true)};
                  },
                  {rand({3})});
  std::string s = g.str();
  EXPECT_NE(s.find("scalar(dtype=f32, value=2)"), std::string::npos) << s;
  EXPECT_NE(s.find("= constant()"), std::string::npos) << s;
  EXPECT_NE(s.find("sum(%add, axes=[0], keepdim=true)"), std::string::npos) << s;
}

TEST(Passes, DeadCodeAndCommonSubexpressions) {
  Graph g = trace([](const std::vector<Tensor>& in) {
                    Tensor unused = exp(in[0]);
                    (void)unused;
                    return std::vector<Tensor>{sin(in[0]) + sin(in[0])};
                  },
                  {rand({4})});
  EXPECT_EQ(g.num_ops(), 2) << g.str();  // one sin, one add
  EXPECT_EQ(g.str().find("exp"), std::string::npos);
}

TEST(Interpreter, EagerAndReferenceAgree) {
  Graph g = seed_graph();
  Tensor x = rand({5}, 1, -3, 3);
  Tensor e = interpret(g, {x}, InterpretMode::Eager)[0];
  Tensor r = interpret(g, {x}, InterpretMode::Reference)[0];
  EXPECT_TRUE(allclose(e, r, 1e-5, 1e-5));
  EXPECT_THROW(interpret(g, {rand({6})}), Error);
  EXPECT_THROW(interpret(g, {}), Error);
}

}  // namespace
