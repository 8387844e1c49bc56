#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "onnx/internal.h"

namespace kiln::onnx {

namespace {

std::string read_file(const std::string& path, const std::string& what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open " + what + " '" + path + "': " + std::strerror(errno));
  std::stringstream ss;
  ss << f.rdbuf();
  if (f.bad()) throw Error("reading " + what + " '" + path + "' failed: " + std::strerror(errno));
  return ss.str();
}

size_t element_bytes(DType t) { return size_t(dtype_bytes(t)); }

// An identifier for a graph listing or a generated C++ argument: "input.1" -> "input_1".
std::string identifier(const std::string& name, size_t k) {
  std::string s;
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "x" + std::to_string(k) + "_" + s;
  return s;
}

struct ModelState {
  std::vector<::onnx::NodeProto> nodes;
  std::map<std::string, Tensor> initializers;
  std::vector<std::string> inputs, outputs;
  int64_t opset = 0;
  std::string dir;
};

std::vector<Tensor> run_graph(const ModelState& m, const std::vector<Tensor>& inputs) {
  if (inputs.size() != m.inputs.size()) {
    throw Error("the ONNX model takes " + std::to_string(m.inputs.size()) + " inputs, not " +
                std::to_string(inputs.size()));
  }
  std::map<std::string, Tensor> values = m.initializers;
  for (size_t k = 0; k < inputs.size(); ++k) values[m.inputs[k]] = inputs[k];
  const auto& table = converters();
  for (const ::onnx::NodeProto& n : m.nodes) {
    if (!n.domain().empty() && n.domain() != "ai.onnx") {
      throw Unsupported(node_name(n) + ": operators of the domain '" + n.domain() +
                        "' are not supported; kiln runs the default ai.onnx domain");
    }
    auto conv = table.find(n.op_type());
    if (conv == table.end()) {
      throw Unsupported(node_name(n) + ": kiln does not support the operator " + n.op_type() + " (opset " +
                        std::to_string(m.opset) + "); `kiln onnx-support` lists those it does");
    }
    std::vector<std::optional<Tensor>> in;
    for (const std::string& name : n.input()) {
      if (name.empty()) {
        in.push_back(std::nullopt);
        continue;
      }
      auto v = values.find(name);
      if (v == values.end()) {
        throw Error(node_name(n) + " reads '" + name +
                    "', which no input, initializer or earlier node gives (the model's nodes must be sorted)");
      }
      in.push_back(v->second);
    }
    const NodeAttrs attrs(n);
    const NodeContext ctx{n, attrs, in, m.opset, m.dir};
    std::vector<Tensor> out;
    try {
      out = conv->second(ctx);
    } catch (const Unsupported&) {
      throw;
    } catch (const Error& e) {
      const std::string what = e.what();
      if (what.rfind("node '", 0) == 0) throw;
      throw Error(node_name(n) + ": " + what);
    } catch (const std::exception& e) {
      // A malformed node a converter did not anticipate (an index past a shape's rank,
      // found by fuzzing): an error about the node, never a crash of the caller.
      throw Error(node_name(n) + ": the node does not fit its inputs (" + e.what() +
                  "); check its inputs' ranks and its attributes against the operator's definition");
    }
    for (int k = 0; k < n.output_size(); ++k) {
      if (n.output(k).empty()) continue;
      if (size_t(k) >= out.size() || !out[size_t(k)].defined()) {
        throw Unsupported(node_name(n) + ": its output " + std::to_string(k) + " ('" + n.output(k) +
                          "') is not supported; kiln computes outputs 0 to " + std::to_string(out.size() - 1));
      }
      values[n.output(k)] = out[size_t(k)];
    }
  }
  std::vector<Tensor> result;
  for (const std::string& name : m.outputs) {
    auto v = values.find(name);
    if (v == values.end()) throw Error("the ONNX model's output '" + name + "' is computed by no node");
    result.push_back(v->second);
  }
  return result;
}

}  // namespace

std::string node_name(const ::onnx::NodeProto& n) {
  std::string name = n.name();
  if (name.empty() && n.output_size() > 0) name = n.output(0);
  return "node '" + name + "' (" + n.op_type() + ")";
}

NodeAttrs::NodeAttrs(const ::onnx::NodeProto& n) : node_(n) {
  for (const auto& a : n.attribute()) attrs_[a.name()] = &a;
}

const ::onnx::AttributeProto& NodeAttrs::raw(const std::string& name) const {
  auto it = attrs_.find(name);
  if (it == attrs_.end()) throw Error(node_name(node_) + " lacks its attribute '" + name + "'");
  return *it->second;
}

const ::onnx::AttributeProto& NodeAttrs::get(const std::string& name,
                                              ::onnx::AttributeProto::AttributeType type) const {
  const ::onnx::AttributeProto& a = raw(name);
  if (!a.ref_attr_name().empty()) {
    throw Unsupported(node_name(node_) + ": attribute '" + name + "' refers to a function's attribute");
  }
  if (a.type() != type && a.type() != ::onnx::AttributeProto::UNDEFINED) {
    throw Error(node_name(node_) + ": attribute '" + name + "' is " +
                ::onnx::AttributeProto::AttributeType_Name(a.type()) + ", not " +
                ::onnx::AttributeProto::AttributeType_Name(type));
  }
  return a;
}

int64_t NodeAttrs::i(const std::string& name, int64_t fallback) const { return has(name) ? i(name) : fallback; }
int64_t NodeAttrs::i(const std::string& name) const { return get(name, ::onnx::AttributeProto::INT).i(); }
float NodeAttrs::f(const std::string& name, float fallback) const {
  return has(name) ? get(name, ::onnx::AttributeProto::FLOAT).f() : fallback;
}
std::string NodeAttrs::s(const std::string& name, const std::string& fallback) const {
  return has(name) ? get(name, ::onnx::AttributeProto::STRING).s() : fallback;
}
std::vector<int64_t> NodeAttrs::ints(const std::string& name, const std::vector<int64_t>& fallback) const {
  if (!has(name)) return fallback;
  const auto& a = get(name, ::onnx::AttributeProto::INTS);
  return {a.ints().begin(), a.ints().end()};
}
std::vector<float> NodeAttrs::floats(const std::string& name) const {
  const auto& a = get(name, ::onnx::AttributeProto::FLOATS);
  return {a.floats().begin(), a.floats().end()};
}
const ::onnx::TensorProto& NodeAttrs::t(const std::string& name) const {
  return get(name, ::onnx::AttributeProto::TENSOR).t();
}

const Tensor& NodeContext::in(size_t k) const {
  if (!has(k)) throw Error(node_name(node) + " needs its input " + std::to_string(k));
  return *inputs[k];
}

std::vector<double> NodeContext::doubles(size_t k) const {
  const Tensor& t = in(k);
  if (t.is_symbolic()) {
    unsupported("its input " + std::to_string(k) + " ('" + node.input(int(k)) +
                "') must be known when the model is traced (an initializer, a Constant, or computed from "
                "them and from shapes); kiln does not take it as a run-time value");
  }
  return t.to_doubles();
}

std::vector<int64_t> NodeContext::ints(size_t k) const {
  const Tensor& t = in(k);
  if (!t.is_symbolic() && t.dtype() == DType::I64) {
    const Tensor h = t.to_host();
    const int64_t* p = static_cast<const int64_t*>(h.data());
    return std::vector<int64_t>(p, p + h.numel());
  }
  std::vector<int64_t> out;
  for (double d : doubles(k)) out.push_back(int64_t(d));
  return out;
}

void NodeContext::unsupported(const std::string& what) const { throw Unsupported(node_name(node) + ": " + what); }
void NodeContext::invalid(const std::string& what) const { throw Error(node_name(node) + ": " + what); }

DType dtype_from_onnx(int32_t t, const std::string& who) {
  using P = ::onnx::TensorProto;
  switch (t) {
    case P::FLOAT: return DType::F32;
    case P::DOUBLE: return DType::F64;
    case P::FLOAT16: return DType::F16;
    case P::BFLOAT16: return DType::BF16;
    case P::INT32: return DType::I32;
    case P::INT64: return DType::I64;
    case P::BOOL: return DType::Bool;
    default: break;
  }
  const std::string name = P::DataType_IsValid(t) ? P::DataType_Name(P::DataType(t)) : "#" + std::to_string(t);
  throw Unsupported(who + ": element type " + name +
                    " is not supported; kiln has FLOAT, DOUBLE, FLOAT16, BFLOAT16, INT32, INT64 and BOOL");
}

Tensor tensor_from_proto(const ::onnx::TensorProto& t, const std::string& model_dir, const std::string& who) {
  const DType dtype = dtype_from_onnx(t.data_type(), who);
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  // The element count, checked before it can overflow (libFuzzer: dims of 9e7 and 7e16).
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) throw Error(who + " has a negative dim");
    if (d > 0 && n > (int64_t(1) << 60) / d) {
      std::string text;
      for (int64_t e : dims) text += (text.empty() ? "" : ", ") + std::to_string(e);
      throw Error(who + " has more than 2^60 elements (dims [" + text + "])");
    }
    n *= d;
  }
  if (t.has_segment()) throw Unsupported(who + " is a segment of a tensor");
  const size_t bytes = size_t(n) * element_bytes(dtype);
  // Each source of data is checked against the shape before the tensor is allocated: a
  // small file must not claim gigabytes.
  auto check_raw = [&](size_t size, const std::string& where) {
    if (size != bytes) {
      throw Error(who + ": " + where + " holds " + std::to_string(size) + " bytes, not the " + std::to_string(bytes) +
                  " its shape and type need (truncated?)");
    }
  };
  auto filled = [&](const void* raw) {
    Tensor out(dtype, dims);
    if (bytes) std::memcpy(out.mutable_data(), raw, bytes);
    return out;
  };
  if (t.data_location() == ::onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    auto integer = [&](const std::string& key, const std::string& value) {
      char* end = nullptr;
      errno = 0;
      const long long v = std::strtoll(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || errno == ERANGE || v < 0) {
        throw Error(who + ": its external data's " + key + " must be a whole number >= 0, not '" + value + "'");
      }
      return int64_t(v);
    };
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = integer("offset", kv.value());
      else if (kv.key() == "length") length = integer("length", kv.value());
    }
    const std::filesystem::path rel(location);
    if (location.empty() || rel.is_absolute()) {
      throw Error(who + ": its external data needs a location relative to the model's folder, not '" + location + "'");
    }
    const std::string path = (std::filesystem::path(model_dir) / rel).string();
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    if (!f) throw Error(who + ": cannot open its external data file '" + path + "': " + std::strerror(errno));
    const int64_t file_size = int64_t(f.tellg());
    const int64_t want = length >= 0 ? length : int64_t(bytes);
    if (offset > file_size || want > file_size - offset) {
      throw Error(who + ": its external data file '" + path + "' (" + std::to_string(file_size) +
                  " bytes) ends before offset " + std::to_string(offset) + " + " + std::to_string(want) + " bytes");
    }
    check_raw(size_t(want), "its external data");
    std::string raw(size_t(want), '\0');
    f.seekg(offset);
    f.read(raw.data(), std::streamsize(raw.size()));
    if (size_t(f.gcount()) != raw.size()) throw Error(who + ": reading its external data file '" + path + "' failed");
    return filled(raw.data());
  }
  if (t.has_raw_data()) {
    check_raw(t.raw_data().size(), "raw_data");
    return filled(t.raw_data().data());
  }
  auto check_count = [&](int count, const char* field) {
    if (int64_t(count) != n) {
      throw Error(who + ": " + field + " holds " + std::to_string(count) + " values, not the " + std::to_string(n) +
                  " of its shape");
    }
  };
  switch (dtype) {
    case DType::F32: check_count(t.float_data_size(), "float_data"); return filled(t.float_data().data());
    case DType::F64: check_count(t.double_data_size(), "double_data"); return filled(t.double_data().data());
    case DType::I64: check_count(t.int64_data_size(), "int64_data"); return filled(t.int64_data().data());
    case DType::I32: check_count(t.int32_data_size(), "int32_data"); return filled(t.int32_data().data());
    default: break;
  }
  // bool, f16 and bf16 come one value per int32.
  check_count(t.int32_data_size(), "int32_data");
  Tensor out(dtype, dims);
  void* dst = out.mutable_data();
  for (int64_t i = 0; i < n; ++i) {
    if (dtype == DType::Bool) static_cast<uint8_t*>(dst)[i] = t.int32_data(int(i)) != 0;
    else static_cast<uint16_t*>(dst)[i] = uint16_t(t.int32_data(int(i)));
  }
  return out;
}

Tensor load_tensor(const std::string& path) {
  const std::string bytes = read_file(path, "tensor file");
  ::onnx::TensorProto t;
  if (!t.ParseFromString(bytes)) throw Error("'" + path + "' is not an ONNX TensorProto (truncated or another format)");
  return tensor_from_proto(t, std::filesystem::path(path).parent_path().string(), "tensor '" + path + "'");
}

CompileOptions Model::compile_options() const {
  CompileOptions o;
  for (size_t k = 0; k < input_names.size(); ++k) o.input_names.push_back(identifier(input_names[k], k));
  o.name = std::filesystem::path(path).stem().string();
  return o;
}

Model load(const std::string& path, const LoadOptions& options) {
  const std::string bytes = read_file(path, "ONNX model");
  ::onnx::ModelProto proto;
  if (!proto.ParseFromString(bytes)) {
    throw Error("'" + path + "' is not an ONNX model: its protobuf does not parse (truncated, or another format)");
  }
  if (!proto.has_graph()) throw Error("'" + path + "' holds no graph");
  auto state = std::make_shared<ModelState>();
  state->dir = std::filesystem::path(path).parent_path().string();
  for (const auto& o : proto.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") state->opset = o.version();
  }
  if (state->opset == 0) state->opset = 1;
  const ::onnx::GraphProto& g = proto.graph();
  if (g.sparse_initializer_size() > 0) throw Unsupported("'" + path + "': sparse initializers are not supported");
  for (const auto& t : g.initializer()) {
    state->initializers[t.name()] = tensor_from_proto(t, state->dir, "initializer '" + t.name() + "'");
  }
  for (const ::onnx::NodeProto& n : g.node()) {
    for (const auto& a : n.attribute()) {
      if (a.has_g() || a.graphs_size() > 0) {
        throw Unsupported(node_name(n) + ": operators with subgraphs (If, Loop, Scan) are not supported");
      }
    }
    state->nodes.push_back(n);
  }
  Model m;
  m.path = path;
  m.opset = state->opset;
  for (const auto& [name, value] : options.constant_inputs) {
    bool found = false;
    for (const auto& v : g.input()) found = found || v.name() == name;
    if (!found) throw Error("LoadOptions::constant_inputs names '" + name + "', which is not an input of '" + path + "'");
    state->initializers[name] = value;
  }
  for (const auto& v : g.input()) {
    if (state->initializers.count(v.name())) continue;  // older exporters list weights as inputs
    const std::string who = "input '" + v.name() + "'";
    if (!v.type().has_tensor_type()) throw Unsupported(who + " is not a tensor");
    const auto& tt = v.type().tensor_type();
    const DType dtype = dtype_from_onnx(tt.elem_type(), who);
    if (!tt.has_shape()) throw Error(who + " has no shape; kiln needs each input's rank");
    std::vector<int64_t> sizes;
    for (int d = 0; d < tt.shape().dim_size(); ++d) {
      const auto& dim = tt.shape().dim(d);
      if (dim.has_dim_value()) {
        sizes.push_back(dim.dim_value());
      } else {
        const std::string name = dim.has_dim_param() ? dim.dim_param() : "";
        auto it = options.dim_sizes.find(name);
        sizes.push_back(it == options.dim_sizes.end() ? 1 : it->second);
        m.named_dims.push_back({{int(m.inputs.size()), d}, name});
      }
    }
    state->inputs.push_back(v.name());
    m.input_names.push_back(v.name());
    m.inputs.push_back({dtype, Shape(sizes)});
  }
  for (const auto& v : g.output()) {
    state->outputs.push_back(v.name());
    m.output_names.push_back(v.name());
  }
  if (state->outputs.empty()) throw Error("'" + path + "' declares no outputs");
  m.fn = [state](const std::vector<Tensor>& in) { return run_graph(*state, in); };
  std::vector<Tensor> examples;
  // Tracing reads shapes, not values: memory reserved, never touched.
  for (const TensorMeta& t : m.inputs) examples.push_back(empty(t.shape, t.dtype));
  m.graph = trace(m.fn, examples, m.compile_options());
  return m;
}

}  // namespace kiln::onnx
