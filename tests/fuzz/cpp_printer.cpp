#include "cpp_printer.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace kiln::fuzz {

namespace {

std::string real(double v) {
  if (std::isnan(v)) return "NAN";
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "-INFINITY";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string ints(const std::vector<int64_t>& v, size_t from = 0) {
  std::string s = "{";
  for (size_t i = from; i < v.size(); ++i) s += (i > from ? ", " : "") + std::to_string(v[i]);
  return s + "}";
}

std::string dtype_enum(DType t) {
  switch (t) {
    case DType::Bool: return "DType::Bool";
    case DType::I32: return "DType::I32";
    case DType::I64: return "DType::I64";
    case DType::F16: return "DType::F16";
    case DType::BF16: return "DType::BF16";
    case DType::F32: return "DType::F32";
    case DType::F64: return "DType::F64";
  }
  return "?";
}

std::string name(const Program& p, int v) {
  return v < int(p.inputs.size()) ? "x" + std::to_string(v) : "v" + std::to_string(v);
}

std::string op_expr(const Program& p, const OpSpec& op, const std::vector<Meta>& metas) {
  const std::string& n = op.op;
  const auto& I = op.ints;
  const auto& R = op.reals;
  std::vector<std::string> a;
  for (int v : op.args) a.push_back(name(p, v));
  auto opt = [&](size_t i) { return i < a.size() ? a[i] : std::string("Tensor()"); };
  auto call = [&](const std::string& rest) { return n + "(" + rest + ")"; };
  static const std::set<std::string> binary = {"add", "sub", "mul",         "div",       "pow", "maximum", "minimum", "eq",
                                               "ne",  "lt",  "le",          "gt",        "ge",  "logical_and", "logical_or"};
  static const std::set<std::string> reduce = {"sum", "mean", "max", "min", "prod"};
  if (binary.count(n)) {
    if (a.size() == 2) return call(a[0] + ", " + a[1]);
    return I[0] ? call(real(R[0]) + ", " + a[0]) : call(a[0] + ", " + real(R[0]));
  }
  if (reduce.count(n)) return call(a[0] + ", " + ints(I, 1) + ", " + (I[0] ? "true" : "false"));
  if (n == "var" || n == "std_dev")
    return call(a[0] + ", " + ints(I, 2) + ", " + std::to_string(I[0]) + ", " + (I[1] ? "true" : "false"));
  if (n == "gelu") return call(a[0] + ", \"" + op.text + "\"");
  if (n == "leaky_relu") return call(a[0] + ", " + real(R[0]));
  if (n == "clamp")
    return call(a[0] + ", " + (I[0] ? real(R[0]) : "std::nullopt") + ", " + (I[1] ? real(R[1]) : "std::nullopt"));
  if (n == "cast") return call(a[0] + ", " + dtype_enum(dtype_from_name(op.text)));
  if (n == "argmax") return call(a[0] + ", " + std::to_string(I[0]) + ", " + (I[1] ? "true" : "false"));
  if (n == "softmax" || n == "log_softmax" || n == "unsqueeze" || n == "squeeze" || n == "tril" || n == "triu" ||
      n == "one_hot")
    return call(a[0] + ", " + std::to_string(I[0]));
  if (n == "layer_norm" || n == "rms_norm") {
    const auto& s = metas[size_t(op.args[0])].shape;
    std::string norm = ints(std::vector<int64_t>(s.end() - I[0], s.end()));
    if (n == "layer_norm") return call(a[0] + ", " + norm + ", " + opt(1) + ", " + opt(2) + ", " + real(R[0]));
    return call(a[0] + ", " + norm + ", " + opt(1) + ", " + real(R[0]));
  }
  if (n == "reshape" || n == "permute" || n == "expand") return call(a[0] + ", " + ints(I));
  if (n == "transpose") return call(a[0] + ", " + std::to_string(I[0]) + ", " + std::to_string(I[1]));
  if (n == "slice")
    return call(a[0] + ", " + std::to_string(I[0]) + ", " + std::to_string(I[1]) + ", " + std::to_string(I[2]) + ", " +
                std::to_string(I[3]));
  if (n == "concat" || n == "stack") {
    std::string list = "{";
    for (size_t i = 0; i < a.size(); ++i) list += (i ? ", " : "") + a[i];
    return call(list + "}, " + std::to_string(I[0]));
  }
  if (n == "split")
    return "split(" + a[0] + ", " + std::to_string(I[0]) + ", " + std::to_string(I[1]) + ")[" + std::to_string(I[2]) + "]";
  if (n == "pad") return call(a[0] + ", " + ints(I) + ", " + real(R[0]));
  if (n == "matmul" || n == "embedding" || n == "mse_loss") return call(a[0] + ", " + a[1]);
  if (n == "linear") return call(a[0] + ", " + a[1] + ", " + opt(2));
  if (n == "conv2d")
    return call(a[0] + ", " + a[1] + ", " + opt(2) + ", {" + std::to_string(I[0]) + "}, {" + std::to_string(I[1]) +
                "}, {" + std::to_string(I[2]) + "}, " + std::to_string(I[3]));
  if (n == "conv_transpose2d")
    return call(a[0] + ", " + a[1] + ", " + opt(2) + ", {" + std::to_string(I[0]) + "}, {" + std::to_string(I[1]) +
                "}, {" + std::to_string(I[2]) + "}, " + std::to_string(I[4]) + ", {" + std::to_string(I[3]) + "}");
  if (n == "max_pool2d")
    return call(a[0] + ", {" + std::to_string(I[0]) + "}, " + (I[1] ? "{" + std::to_string(I[1]) + "}" : "{}") + ", {" +
                std::to_string(I[2]) + "}, {" + std::to_string(I[3]) + "}, " + (I[4] ? "true" : "false"));
  if (n == "avg_pool2d")
    return call(a[0] + ", {" + std::to_string(I[0]) + "}, " + (I[1] ? "{" + std::to_string(I[1]) + "}" : "{}") + ", {" +
                std::to_string(I[2]) + "}, " + (I[3] ? "true" : "false") + ", " + (I[4] ? "true" : "false"));
  if (n == "adaptive_avg_pool2d") return call(a[0] + ", " + ints(I));
  if (n == "gather" || n == "index_select") return call(a[0] + ", " + std::to_string(I[0]) + ", " + a[1]);
  if (n == "cross_entropy") return call(a[0] + ", " + a[1] + ", \"" + op.text + "\"");
  if (n == "dropout")
    return call(a[0] + ", " + real(R[0]) + ", " + std::to_string(I[0]) + ", " + (I[1] ? "true" : "false"));
  return call(a[0]);  // unary
}

}  // namespace

std::string to_cpp(const Program& p, const Failure& failure) {
  const std::vector<Meta> metas = infer(p);
  std::ostringstream os;
  os << "// kiln_fuzz: " << failure.signature() << "\n";
  std::istringstream detail(failure.detail);
  std::string line;
  while (std::getline(detail, line)) os << "//   " << line << "\n";
  os << "#include <cmath>\n#include <cstdio>\n\n#include \"kiln.h\"\n\nusing namespace kiln;\n\nint main() {\n";
  std::string params, args;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const InputSpec& in = p.inputs[i];
    os << "  Tensor x" << i << " = from_vector(std::vector<double>{";
    for (size_t k = 0; k < in.values.size(); ++k) os << (k ? ", " : "") << real(in.values[k]);
    os << "}, Shape" << ints(in.meta.shape) << ", " << dtype_enum(in.meta.dtype) << ");\n";
    params += std::string(i ? ", " : "") + "const Tensor& x" + std::to_string(i);
    args += std::string(i ? ", " : "") + "x" + std::to_string(i);
  }
  const bool multi = p.outputs.size() > 1;
  os << "  auto f = [](" << params << ") {\n";
  for (size_t k = 0; k < p.ops.size(); ++k) {
    int v = int(p.inputs.size() + k);
    os << "    Tensor " << name(p, v) << " = " << op_expr(p, p.ops[k], metas) << ";\n";
  }
  if (multi) {
    os << "    return std::vector<Tensor>{";
    for (size_t k = 0; k < p.outputs.size(); ++k) os << (k ? ", " : "") << name(p, p.outputs[k]);
    os << "};\n";
  } else {
    os << "    return " << name(p, p.outputs[0]) << ";\n";
  }
  os << "  };\n";
  auto print = [&](const std::string& what, const std::string& expr) {
    os << "  std::printf(\"" << what << " %s\\n\", (" << expr << ").str(64).c_str());\n";
  };
  const std::string& path = failure.path;
  if (path == "eager" || path == "compiled" || path == "reference") {
    if (path == "reference") {
      os << "  Graph g = trace([&](const std::vector<Tensor>& in) { return f(" ;
      for (size_t i = 0; i < p.inputs.size(); ++i) os << (i ? ", " : "") << "in[" << i << "]";
      os << "); }, {" << args << "});\n";
      os << "  std::vector<Tensor> out = interpret(g, {" << args << "}, InterpretMode::Reference);\n";
      for (size_t k = 0; k < p.outputs.size(); ++k) print("output " + std::to_string(k), "out[" + std::to_string(k) + "]");
    } else {
      os << "  auto out = " << (path == "compiled" ? "compile(f)" : "f") << "(" << args << ");\n";
      if (multi)
        for (size_t k = 0; k < p.outputs.size(); ++k) print("output " + std::to_string(k), "out[" + std::to_string(k) + "]");
      else
        print("output", "out");
    }
    os << "}\n";
    return os.str();
  }
  // Gradient paths: the loss the fuzzer differentiates, over the float outputs.
  std::vector<size_t> fl;
  for (size_t k = 0; k < p.outputs.size(); ++k)
    if (is_float(metas[size_t(p.outputs[k])].dtype)) fl.push_back(k);
  for (size_t k : fl) {
    const Meta& m = metas[size_t(p.outputs[k])];
    os << "  Tensor w" << k << " = rand(Shape" << ints(m.shape) << ", " << 1000 + k << ", 0.5, 1.5, " << dtype_enum(m.dtype)
       << ");\n";
  }
  auto loss_of = [&](const std::string& outs) {
    std::string s;
    for (size_t i = 0; i < fl.size(); ++i) {
      std::string o = multi ? outs + "[" + std::to_string(fl[i]) + "]" : outs;
      s += (i ? " + " : "") + std::string("sum(") + o + " * w" + std::to_string(fl[i]) + ")";
    }
    return s;
  };
  os << "  auto loss = [&](" << params << ") { auto o = f(" << args << "); return " << loss_of("o") << "; };\n";
  std::vector<int> argnums;
  for (int i = 0; i < int(p.inputs.size()); ++i)
    if (is_float(p.inputs[size_t(i)].meta.dtype) && p.inputs[size_t(i)].index_limit == 0) argnums.push_back(i);
  std::string argnum_list = "{";
  for (size_t i = 0; i < argnums.size(); ++i) argnum_list += (i ? ", " : "") + std::to_string(argnums[i]);
  argnum_list += "}";
  if (path == "grad-eager" || path == "grad-compiled" || path == "grad-reference") {
    if (path == "grad-reference") {
      os << "  Graph g = trace(grad(loss, " << argnum_list << "), {" << args << "});\n";
      os << "  std::vector<Tensor> grads = interpret(g, {" << args << "}, InterpretMode::Reference);\n";
    } else {
      os << "  std::vector<Tensor> grads = " << (path == "grad-compiled" ? "compile(grad(loss, " + argnum_list + "))"
                                                                          : "grad(loss, " + argnum_list + ")")
         << "({" << args << "});\n";
    }
    for (size_t i = 0; i < argnums.size(); ++i)
      print("d/dx" + std::to_string(argnums[i]), "grads[" + std::to_string(i) + "]");
  } else {  // backward-eager, backward-compiled
    for (int i : argnums) os << "  x" << i << " = x" << i << ".requires_grad();\n";
    if (path == "backward-compiled")
      os << "  auto cf = compile(f);\n  auto o = cf(" << args << ");\n  (" << loss_of("o") << ").backward();\n";
    else
      os << "  loss(" << args << ").backward();\n";
    for (int i : argnums) print("d/dx" + std::to_string(i), "x" + std::to_string(i) + ".grad()");
  }
  os << "}\n";
  return os.str();
}

}  // namespace kiln::fuzz
