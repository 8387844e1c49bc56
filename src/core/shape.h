// Shapes, in row-major (NumPy) order: dims[0] is the outermost dimension.
// A dimension is static (a known size) or symbolic (a name such as "s0" whose size is
// only known at run time, so one compiled kernel serves every size).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

namespace kiln {

struct Dim {
  int64_t size = 1;   // meaningful when static
  std::string sym;    // non-empty when symbolic

  Dim(int64_t n = 1) : size(n) {}  // NOLINT: a size converts to a static dim
  static Dim symbolic(std::string name) {
    Dim d;
    d.sym = std::move(name);
    d.size = -1;
    return d;
  }
  bool is_static() const { return sym.empty(); }
  bool operator==(const Dim& o) const { return sym == o.sym && (!is_static() || size == o.size); }
  std::string str() const;
};

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> sizes);
  explicit Shape(const std::vector<int64_t>& sizes);
  explicit Shape(std::vector<Dim> dims) : dims_(std::move(dims)) {}

  int rank() const { return int(dims_.size()); }
  const Dim& operator[](int i) const { return dims_.at(size_t(i)); }
  Dim& operator[](int i) { return dims_.at(size_t(i)); }
  const std::vector<Dim>& dims() const { return dims_; }
  bool is_static() const;
  // Element count; requires a static shape.
  int64_t numel() const;
  std::vector<int64_t> sizes() const;  // requires a static shape
  bool operator==(const Shape& o) const { return dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return !(*this == o); }
  std::string str() const;  // "[5, s0]"

 private:
  std::vector<Dim> dims_;
};

// Sizes of the symbols, bound from concrete inputs at run time.
using SymbolSizes = std::map<std::string, int64_t>;
// The concrete shape of `s` under `bindings`; throws if a symbol is unbound.
std::vector<int64_t> concretize(const Shape& s, const SymbolSizes& bindings);

// NumPy broadcasting of two shapes; `op` names the operation in the error message.
Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& op);

// Normalizes a possibly negative axis against `rank`; throws naming `op` when out of range.
int normalize_axis(int64_t axis, int rank, const std::string& op);

}  // namespace kiln
