// The ONNX importer on models built here with ONNX's protobuf classes: values against
// kiln's own ops, compile and grad through an imported model, named dims, external data,
// and the errors for malformed files and unsupported operators.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include "kiln.h"
#include "onnx/onnx.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {

std::string temp_dir(const std::string& name) {
  const fs::path d = fs::path(::testing::TempDir()) / ("kiln_onnx_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

void set_shape(::onnx::ValueInfoProto* v, const std::string& name, int32_t type, const std::vector<std::string>& dims) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(type);
  for (const std::string& d : dims) {
    auto* dim = t->mutable_shape()->add_dim();
    if (std::isdigit(static_cast<unsigned char>(d[0]))) dim->set_dim_value(std::stoll(d));
    else dim->set_dim_param(d);
  }
}

::onnx::TensorProto f32_tensor(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
  ::onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(::onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
  return t;
}

::onnx::NodeProto* add_node(::onnx::GraphProto* g, const std::string& op, const std::vector<std::string>& in,
                            const std::vector<std::string>& out) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(out[0]);
  for (const auto& s : in) n->add_input(s);
  for (const auto& s : out) n->add_output(s);
  return n;
}

// y = relu(x W + b): x [batch, 3], W [3, 4], b [4].
::onnx::ModelProto mlp_model(const std::string& batch) {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  set_shape(g->add_input(), "x", ::onnx::TensorProto::FLOAT, {batch, "3"});
  set_shape(g->add_output(), "y", ::onnx::TensorProto::FLOAT, {batch, "4"});
  *g->add_initializer() = f32_tensor("W", {3, 4}, {0.5f, -1, 2, 0.25f, 1, 1, -0.5f, 3, -2, 0.75f, 1, -1});
  *g->add_initializer() = f32_tensor("b", {4}, {0.1f, -0.2f, 0.3f, 0});
  add_node(g, "Gemm", {"x", "W", "b"}, {"h"});
  add_node(g, "Relu", {"h"}, {"y"});
  return m;
}

std::string save(const ::onnx::ModelProto& m, const std::string& dir, const std::string& name = "model.onnx") {
  const std::string path = (fs::path(dir) / name).string();
  std::ofstream f(path, std::ios::binary);
  m.SerializeToOstream(&f);
  return path;
}

Tensor weight() { return from_vector(std::vector<double>{0.5, -1, 2, 0.25, 1, 1, -0.5, 3, -2, 0.75, 1, -1}, Shape({3, 4})); }
Tensor bias() { return from_vector(std::vector<double>{0.1, -0.2, 0.3, 0}, Shape({4})); }

TEST(OnnxImport, AModelRunsEagerCompiledAndDifferentiatedAsKilnsOwnOps) {
  const kiln::onnx::Model m = kiln::onnx::load(save(mlp_model("2"), temp_dir("mlp")));
  EXPECT_EQ(m.input_names, std::vector<std::string>{"x"});
  EXPECT_EQ(m.output_names, std::vector<std::string>{"y"});
  EXPECT_EQ(m.inputs[0].str(), "f32[2, 3]");
  const Tensor x = rand({2, 3}, 5, -2, 2);
  const Tensor want = relu(matmul(x, weight()) + bias());
  EXPECT_TRUE(allclose(m.fn({x})[0], want, 1e-6, 1e-6));
  EXPECT_TRUE(allclose(compile(m.fn, m.compile_options())({x})[0], want, 1e-6, 1e-6));
  // Gradients through the imported model match those through the same ops written here.
  auto loss_onnx = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{sum(m.fn(in)[0] * m.fn(in)[0])}; };
  auto loss_kiln = [&](const std::vector<Tensor>& in) {
    const Tensor y = relu(matmul(in[0], weight()) + bias());
    return std::vector<Tensor>{sum(y * y)};
  };
  EXPECT_TRUE(allclose(grad_fn(loss_onnx, {0})({x})[0], grad_fn(loss_kiln, {0})({x})[0], 1e-5, 1e-6));
  // The graph lists the imported ops with the model's input name.
  const std::string listing = m.graph.str();
  EXPECT_NE(listing.find("matmul"), std::string::npos) << listing;
  EXPECT_NE(listing.find("%x"), std::string::npos) << listing;
}

// Einsum beyond ONNX's five node tests: implicit outputs, "..." that broadcasts, three
// operands, a trace, a full sum and an outer product, against kiln's own ops.
TEST(OnnxImport, EinsumEquationsMatchTheirContractions) {
  struct Case {
    std::string equation;
    std::vector<std::vector<int64_t>> shapes;
    std::function<Tensor(const std::vector<Tensor>&)> want;
  };
  const std::vector<Case> cases = {
      {"ij,jk", {{3, 4}, {4, 5}}, [](const auto& t) { return matmul(t[0], t[1]); }},
      {"...ij,...jk->...ik", {{2, 1, 3, 4}, {5, 4, 2}}, [](const auto& t) { return matmul(t[0], t[1]); }},
      {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}, [](const auto& t) { return matmul(matmul(t[0], t[1]), t[2]); }},
      {"ii", {{4, 4}}, [](const auto& t) { return sum(t[0] * tril(triu(ones({4, 4})))); }},
      {"ij->", {{3, 4}}, [](const auto& t) { return sum(t[0]); }},
      {"i,j->ij", {{3}, {4}}, [](const auto& t) { return reshape(t[0], {3, 1}) * reshape(t[1], {1, 4}); }},
      {"bij,bkj->bki", {{2, 3, 4}, {2, 5, 4}}, [](const auto& t) { return matmul(t[1], transpose(t[0], 1, 2)); }},
  };
  uint64_t seed = 11;
  for (const Case& c : cases) {
    ::onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(12);
    auto* g = m.mutable_graph();
    std::vector<std::string> names;
    std::vector<Tensor> inputs;
    for (size_t k = 0; k < c.shapes.size(); ++k) {
      names.push_back("x" + std::to_string(k));
      std::vector<std::string> dims;
      for (int64_t d : c.shapes[k]) dims.push_back(std::to_string(d));
      set_shape(g->add_input(), names.back(), ::onnx::TensorProto::FLOAT, dims);
      inputs.push_back(rand(Shape(c.shapes[k]), seed++, -2, 2));
    }
    const Tensor want = c.want(inputs);
    std::vector<std::string> out_dims;
    for (int64_t d : want.sizes()) out_dims.push_back(std::to_string(d));
    set_shape(g->add_output(), "y", ::onnx::TensorProto::FLOAT, out_dims);
    auto* n = add_node(g, "Einsum", names, {"y"});
    auto* a = n->add_attribute();
    a->set_name("equation");
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(c.equation);
    const kiln::onnx::Model model = kiln::onnx::load(save(m, temp_dir("einsum")));
    const Tensor got = model.fn(inputs)[0];
    EXPECT_EQ(got.shape(), want.shape()) << c.equation;
    EXPECT_TRUE(allclose(got, want, 1e-5, 1e-5)) << c.equation << ": " << got.str() << " vs " << want.str();
  }
}

// ONNX's recurrent node tests are forward-only with full lengths; here bidirectional GRU
// (linear_before_reset) and LSTM with peepholes and uneven sequence_lens, against a scalar
// loop written from the operator documents.
struct RecurrentReference {
  std::string op;
  int64_t steps, batch, input, hidden, dirs;
  std::vector<double> x, w, r, b, p;  // ONNX layouts
  std::vector<int64_t> lens;
  bool linear_before_reset = false;

  static double sigm(double v) { return 1 / (1 + std::exp(-v)); }
  // Y [steps, dirs, batch, hidden] and Y_h [dirs, batch, hidden].
  std::pair<std::vector<double>, std::vector<double>> run() const {
    const int64_t g = op == "GRU" ? 3 : 4, gh = g * hidden;
    std::vector<double> y(size_t(steps * dirs * batch * hidden), 0.0), yh(size_t(dirs * batch * hidden), 0.0);
    for (int64_t d = 0; d < dirs; ++d) {
      for (int64_t n = 0; n < batch; ++n) {
        std::vector<double> h(size_t(hidden), 0.0), cell(size_t(hidden), 0.0);
        const int64_t len = lens[size_t(n)];
        for (int64_t s = 0; s < len; ++s) {
          const int64_t t = d == 0 ? s : len - 1 - s;
          // xw[k] = W x + Wb, hr[k] = R h + Rb, for every gate row k.
          std::vector<double> xw(static_cast<size_t>(gh), 0.0), hr(static_cast<size_t>(gh), 0.0);
          for (int64_t k = 0; k < gh; ++k) {
            double a = b[size_t(d * 2 * gh + k)], c = b[size_t(d * 2 * gh + gh + k)];
            for (int64_t i = 0; i < input; ++i) a += w[size_t((d * gh + k) * input + i)] * x[size_t((t * batch + n) * input + i)];
            for (int64_t i = 0; i < hidden; ++i) c += r[size_t((d * gh + k) * hidden + i)] * h[size_t(i)];
            xw[size_t(k)] = a, hr[size_t(k)] = c;
          }
          std::vector<double> hn(static_cast<size_t>(hidden), 0.0);
          for (int64_t j = 0; j < hidden; ++j) {
            const size_t J = size_t(j), H = size_t(hidden);
            if (op == "GRU") {
              const double z = sigm(xw[J] + hr[J]), rr = sigm(xw[H + J] + hr[H + J]);
              double cand;
              if (linear_before_reset) {
                cand = std::tanh(xw[2 * H + J] + rr * hr[2 * H + J]);
              } else {  // R_h (r * h) + Rb_h
                double rh = b[size_t(d * 2 * gh + gh) + 2 * H + J];
                for (int64_t i = 0; i < hidden; ++i) {  // the reset gate of dim i, not j
                  const double ri = sigm(xw[H + size_t(i)] + hr[H + size_t(i)]);
                  rh += r[size_t((d * gh + 2 * hidden + j) * hidden + i)] * ri * h[size_t(i)];
                }
                cand = std::tanh(xw[2 * H + J] + rh);
              }
              hn[J] = (1 - z) * cand + z * h[J];
            } else {
              const double* pd = &p[size_t(d * 3 * hidden)];
              const double i = sigm(xw[J] + hr[J] + pd[J] * cell[J]);
              const double f = sigm(xw[2 * H + J] + hr[2 * H + J] + pd[2 * H + J] * cell[J]);
              cell[J] = f * cell[J] + i * std::tanh(xw[3 * H + J] + hr[3 * H + J]);
              const double o = sigm(xw[H + J] + hr[H + J] + pd[H + J] * cell[J]);
              hn[J] = o * std::tanh(cell[J]);
            }
          }
          h = hn;
          for (int64_t j = 0; j < hidden; ++j) y[size_t(((t * dirs + d) * batch + n) * hidden + j)] = h[size_t(j)];
        }
        for (int64_t j = 0; j < hidden; ++j) yh[size_t((d * batch + n) * hidden + j)] = h[size_t(j)];
      }
    }
    return {y, yh};
  }
};

TEST(OnnxImport, BidirectionalGruAndLstmWithSequenceLengthsMatchTheOperatorDocuments) {
  for (const std::string op : {"GRU", "LSTM"}) {
    for (bool lbr : {false, true}) {
      if (op == "LSTM" && lbr) continue;
      RecurrentReference ref{op, 3, 3, 2, 3, 2};
      ref.linear_before_reset = lbr;
      const int64_t g = op == "GRU" ? 3 : 4, gh = g * ref.hidden;
      auto values = [](int64_t n, uint64_t seed) { return rand(Shape({n}), seed, -1, 1).to_doubles(); };
      ref.x = values(ref.steps * ref.batch * ref.input, 1), ref.w = values(2 * gh * ref.input, 2);
      ref.r = values(2 * gh * ref.hidden, 3), ref.b = values(2 * 2 * gh, 4), ref.p = values(2 * 3 * ref.hidden, 5);
      ref.lens = {3, 1, 2};
      ::onnx::ModelProto m;
      m.set_ir_version(8);
      m.add_opset_import()->set_version(14);
      auto* gp = m.mutable_graph();
      auto tensor = [](const std::string& name, const std::vector<int64_t>& dims, const std::vector<double>& v) {
        return f32_tensor(name, dims, std::vector<float>(v.begin(), v.end()));
      };
      set_shape(gp->add_input(), "x", ::onnx::TensorProto::FLOAT, {"3", "3", "2"});
      *gp->add_initializer() = tensor("W", {2, gh, ref.input}, ref.w);
      *gp->add_initializer() = tensor("R", {2, gh, ref.hidden}, ref.r);
      *gp->add_initializer() = tensor("B", {2, 2 * gh}, ref.b);
      ::onnx::TensorProto lens;
      lens.set_name("lens");
      lens.set_data_type(::onnx::TensorProto::INT32);
      lens.add_dims(3);
      for (int64_t l : ref.lens) lens.add_int32_data(int32_t(l));
      *gp->add_initializer() = lens;
      std::vector<std::string> ins = {"x", "W", "R", "B", "lens"};
      if (op == "LSTM") {
        *gp->add_initializer() = tensor("P", {2, 3 * ref.hidden}, ref.p);
        ins.insert(ins.end(), {"", "", "P"});
      }
      set_shape(gp->add_output(), "y", ::onnx::TensorProto::FLOAT, {"3", "2", "3", "3"});
      set_shape(gp->add_output(), "y_h", ::onnx::TensorProto::FLOAT, {"2", "3", "3"});
      auto* n = add_node(gp, op, ins, {"y", "y_h"});
      auto attr = [&](const std::string& name, int64_t v) {
        auto* a = n->add_attribute();
        a->set_name(name), a->set_type(::onnx::AttributeProto::INT), a->set_i(v);
      };
      attr("hidden_size", ref.hidden);
      if (lbr) attr("linear_before_reset", 1);
      auto* dir = n->add_attribute();
      dir->set_name("direction"), dir->set_type(::onnx::AttributeProto::STRING), dir->set_s("bidirectional");
      const kiln::onnx::Model model = kiln::onnx::load(save(m, temp_dir("recurrent")));
      const Tensor x = from_vector(ref.x, Shape({3, 3, 2}));
      const auto [y, yh] = ref.run();
      // Compiled only: the eager path runs the same ops (and ONNX's node tests run both).
      for (const std::vector<Tensor>& got : {compile(model.fn, model.compile_options())({x})}) {
        EXPECT_TRUE(allclose(got[0], from_vector(y, Shape({3, 2, 3, 3})), 1e-5, 1e-5)) << op << lbr << got[0].str();
        EXPECT_TRUE(allclose(got[1], from_vector(yh, Shape({2, 3, 3})), 1e-5, 1e-5)) << op << lbr << got[1].str();
      }
    }
  }
}

TEST(OnnxImport, NamedDimsTakeTheirSizesAndAnySizeCompiles) {
  const std::string path = save(mlp_model("batch"), temp_dir("named"));
  const kiln::onnx::Model m = kiln::onnx::load(path, {{{"batch", 5}}, {}});
  ASSERT_EQ(m.named_dims.size(), 1u);
  EXPECT_EQ(m.named_dims[0].second, "batch");
  EXPECT_EQ(m.inputs[0].str(), "f32[5, 3]");
  auto f = compile(m.fn, m.compile_options());
  for (int64_t n : {1, 7}) {
    const Tensor x = rand({n, 3}, uint64_t(n), -1, 1);
    EXPECT_TRUE(allclose(f({x})[0], relu(matmul(x, weight()) + bias()), 1e-6, 1e-6)) << n;
  }
}

TEST(OnnxImport, ExternalDataIsReadRelativeToTheModel) {
  const std::string dir = temp_dir("external");
  ::onnx::ModelProto m = mlp_model("2");
  auto* w = m.mutable_graph()->mutable_initializer(0);
  const std::string raw = w->raw_data();
  {
    std::ofstream f(fs::path(dir) / "weights.bin", std::ios::binary);
    f << "padding!" << raw;
  }
  w->clear_raw_data();
  w->set_data_location(::onnx::TensorProto::EXTERNAL);
  auto kv = [&](const std::string& k, const std::string& v) {
    auto* e = w->add_external_data();
    e->set_key(k), e->set_value(v);
  };
  kv("location", "weights.bin"), kv("offset", "8"), kv("length", std::to_string(raw.size()));
  const kiln::onnx::Model loaded = kiln::onnx::load(save(m, dir));
  const Tensor x = rand({2, 3}, 9);
  EXPECT_TRUE(allclose(loaded.fn({x})[0], relu(matmul(x, weight()) + bias()), 1e-6, 1e-6));
  // A data file shorter than the tensor is an error that says so.
  fs::resize_file(fs::path(dir) / "weights.bin", 20);
  try {
    kiln::onnx::load(save(m, dir));
    ADD_FAILURE() << "a short external data file loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("weights.bin"), std::string::npos) << e.what();
  }
  // Offsets and lengths are whole numbers >= 0, within the file.
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"offset", "-8"}, {"length", "12abc"}, {"length", "99999999999999999999"}, {"length", "4000000000000"}}) {
    ::onnx::ModelProto bad = m;
    auto* e = bad.mutable_graph()->mutable_initializer(0)->mutable_external_data(key == "offset" ? 1 : 2);
    e->set_value(value);
    try {
      kiln::onnx::load(save(bad, dir, "bad_external.onnx"));
      ADD_FAILURE() << key << "=" << value << " loaded";
    } catch (const Error& err) {
      EXPECT_NE(std::string(err.what()).find("initializer 'W'"), std::string::npos) << err.what();
    }
  }
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const kiln::onnx::Unsupported& e) {
    return std::string("unsupported: ") + e.what();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(OnnxImport, MalformedFilesAndUnsupportedOperatorsAreErrorsNotCrashes) {
  const std::string dir = temp_dir("errors");
  const std::string good = save(mlp_model("2"), dir);
  std::string bytes;
  {
    std::ifstream f(good, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), {});
  }
  // Every truncation of a valid file, and garbage, is a kiln::Error.
  for (size_t cut = 1; cut < bytes.size(); cut += 7) {
    const std::string path = (fs::path(dir) / "cut.onnx").string();
    std::ofstream(path, std::ios::binary) << bytes.substr(0, cut);
    const std::string e = error_of([&] { kiln::onnx::load(path); });
    EXPECT_NE(e, "no error") << "cut at " << cut;
  }
  EXPECT_NE(error_of([&] { kiln::onnx::load((fs::path(dir) / "missing.onnx").string()); }).find("cannot open"), std::string::npos);
  // An operator kiln lacks names the node and the operator.
  ::onnx::ModelProto m = mlp_model("2");
  m.mutable_graph()->mutable_node(1)->set_op_type("Frobnicate");
  std::string e = error_of([&] { kiln::onnx::load(save(m, dir, "op.onnx")); });
  EXPECT_NE(e.find("unsupported: node 'y' (Frobnicate): kiln does not support the operator Frobnicate"), std::string::npos) << e;
  // An element type kiln lacks names the input and the types kiln has.
  m = mlp_model("2");
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::UINT8);
  e = error_of([&] { kiln::onnx::load(save(m, dir, "u8.onnx")); });
  EXPECT_NE(e.find("unsupported: input 'x': element type UINT8 is not supported"), std::string::npos) << e;
  // raw_data of the wrong size.
  m = mlp_model("2");
  m.mutable_graph()->mutable_initializer(0)->mutable_raw_data()->resize(10);
  e = error_of([&] { kiln::onnx::load(save(m, dir, "raw.onnx")); });
  EXPECT_NE(e.find("initializer 'W': raw_data holds 10 bytes, not the 48"), std::string::npos) << e;
  // Dims whose product overflows (libFuzzer: 9e7 x 7e16 elements), and a shape of 10^10
  // elements with 4 bytes of data: errors before anything is allocated.
  m = mlp_model("2");
  *m.mutable_graph()->mutable_initializer(0) = f32_tensor("W", {91286118, 66991038614849428}, {});
  e = error_of([&] { kiln::onnx::load(save(m, dir, "huge.onnx")); });
  EXPECT_NE(e.find("initializer 'W' has more than 2^60 elements"), std::string::npos) << e;
  m = mlp_model("2");
  *m.mutable_graph()->mutable_initializer(0) = f32_tensor("W", {100000, 100000}, {1.0f});
  e = error_of([&] { kiln::onnx::load(save(m, dir, "claims.onnx")); });
  EXPECT_NE(e.find("initializer 'W': "), std::string::npos) << e;
  // A node reading a value nothing defines.
  m = mlp_model("2");
  m.mutable_graph()->mutable_node(1)->set_input(0, "nowhere");
  e = error_of([&] { kiln::onnx::load(save(m, dir, "dangling.onnx")); });
  EXPECT_NE(e.find("node 'y' (Relu) reads 'nowhere'"), std::string::npos) << e;
  // A variadic operator given no inputs (libFuzzer found a Concat of none reading past
  // its list).
  m = mlp_model("2");
  m.mutable_graph()->mutable_node(1)->set_op_type("Concat");
  m.mutable_graph()->mutable_node(1)->clear_input();
  m.mutable_graph()->mutable_node(1)->add_attribute()->set_name("axis");
  m.mutable_graph()->mutable_node(1)->mutable_attribute(0)->set_type(::onnx::AttributeProto::INT);
  e = error_of([&] { kiln::onnx::load(save(m, dir, "concat.onnx")); });
  EXPECT_NE(e.find("node 'y' (Concat) needs its input 0"), std::string::npos) << e;
  // Shapes that do not fit are kiln's error with the node named.
  m = mlp_model("2");
  *m.mutable_graph()->mutable_initializer(0) = f32_tensor("W", {2, 4}, std::vector<float>(8, 1.0f));
  e = error_of([&] { kiln::onnx::load(save(m, dir, "shapes.onnx")); });
  EXPECT_EQ(e.rfind("node 'h' (Gemm): ", 0), 0u) << e;
}

}  // namespace
