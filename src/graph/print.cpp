// Graph::str() (an FX-style listing) and Graph::to_dot() (Graphviz).
#include <sstream>

#include "graph/graph.h"

namespace kiln {

std::string Graph::str() const {
  std::ostringstream os;
  os << "graph(";
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const Node& n = node(inputs_[i]);
    os << (i ? ", " : "") << n.name << ": " << n.meta.str();
  }
  os << "):\n";
  for (const Node& n : nodes_) {
    if (n.is_placeholder()) continue;
    os << "  %" << n.name << " : " << n.meta.str() << " = " << n.op << "(";
    bool first = true;
    for (int i : n.inputs) {
      os << (first ? "" : ", ") << "%" << node(i).name;
      first = false;
    }
    if (!n.attrs.empty()) os << (first ? "" : ", ") << n.attrs.str();
    os << ")\n";
  }
  os << "  return (";
  for (size_t i = 0; i < outputs_.size(); ++i) os << (i ? ", " : "") << "%" << node(outputs_[i]).name;
  os << ")\n";
  return os.str();
}

namespace {
std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}
const char* fill_color(const Node& n) {
  if (n.is_placeholder()) return "#cfe2ff";
  if (n.is_constant()) return "#e2e3e5";
  switch (get_op(n.op).kind) {
    case OpKind::Reduction: return "#f8d7da";
    case OpKind::Contraction: return "#fff3cd";
    case OpKind::Injective: return "#d1e7dd";
    default: return "#ffffff";
  }
}
}  // namespace

std::string Graph::to_dot(const std::string& title) const {
  std::ostringstream os;
  os << "digraph \"" << dot_escape(title) << "\" {\n"
     << "  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", fontname=\"monospace\"];\n";
  for (const Node& n : nodes_) {
    std::string label = n.name + "\\n" + n.op;
    if (!n.attrs.empty()) label += "(" + dot_escape(n.attrs.str()) + ")";
    label += "\\n" + n.meta.str();
    os << "  n" << n.id << " [label=\"" << label << "\", fillcolor=\"" << fill_color(n) << "\"];\n";
  }
  for (const Node& n : nodes_) {
    for (int i : n.inputs) os << "  n" << i << " -> n" << n.id << ";\n";
  }
  for (size_t k = 0; k < outputs_.size(); ++k) {
    os << "  out" << k << " [label=\"output " << k << "\", shape=ellipse, fillcolor=\"#d1e7dd\"];\n"
       << "  n" << outputs_[k] << " -> out" << k << ";\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace kiln
