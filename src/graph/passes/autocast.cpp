#include "graph/passes/autocast.h"

#include <set>
#include <vector>

#include "core/error.h"

namespace kiln {

namespace {

const std::set<std::string>& low_precision_ops() {
  static const std::set<std::string> ops = {"matmul", "conv2d"};
  return ops;
}

const std::set<std::string>& f32_ops() {
  static const std::set<std::string> ops = {"exp",  "log",  "pow",  "rsqrt",   "softplus",    "tan",        "sum",
                                            "prod", "mean", "softmax", "log_softmax", "layer_norm", "rms_norm"};
  return ops;
}

bool is_half(DType t) { return t == DType::F16 || t == DType::BF16; }

}  // namespace

Graph autocast(const Graph& g, const std::string& low_name) {
  if (low_name.empty()) return g;
  if (low_name != "bf16" && low_name != "f16") {
    user_error("CompileOptions::autocast must be \"bf16\", \"f16\" or \"\" (off), not '", low_name, "'");
  }
  const DType low = dtype_from_name(low_name);
  Graph out;
  std::vector<int> id(g.nodes().size(), -1);
  auto cast_to = [&](int v, DType t) {
    return out.node(v).meta.dtype == t ? v : out.add_op("cast", {v}, {{"dtype", std::string(dtype_name(t))}});
  };
  for (const Node& n : g.nodes()) {
    if (n.is_placeholder()) {
      id[size_t(n.id)] = out.add_placeholder(n.name, n.meta);
      continue;
    }
    if (n.is_constant()) {
      id[size_t(n.id)] = out.add_constant(n.constant);
      continue;
    }
    std::vector<int> original, ins;
    for (int i : n.inputs) original.push_back(id[size_t(i)]);
    ins = original;
    const bool to_low = low_precision_ops().count(n.op) > 0, to_f32 = f32_ops().count(n.op) > 0;
    for (int& v : ins) {
      const DType t = out.node(v).meta.dtype;
      if (to_low && t == DType::F32) v = cast_to(v, low);
      if (to_f32 && is_half(t)) v = cast_to(v, DType::F32);
    }
    if (ins == original) {
      id[size_t(n.id)] = out.add_op(n.op, ins, n.attrs);
      continue;
    }
    try {
      id[size_t(n.id)] = out.add_op(n.op, ins, n.attrs);
    } catch (const Error&) {
      // The op takes no such mix: it keeps the types its inputs had before this pass.
      std::vector<int> back;
      for (size_t j = 0; j < original.size(); ++j) back.push_back(cast_to(original[j], g.node(n.inputs[j]).meta.dtype));
      id[size_t(n.id)] = out.add_op(n.op, back, n.attrs);
    }
  }
  std::vector<int> outs;
  for (int o : g.outputs()) outs.push_back(cast_to(id[size_t(o)], g.node(o).meta.dtype));
  out.set_outputs(outs);
  return out;
}

}  // namespace kiln
