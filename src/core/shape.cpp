#include "core/shape.h"

#include "core/error.h"

namespace kiln {

std::string Dim::str() const { return is_static() ? std::to_string(size) : sym; }

Shape::Shape(std::initializer_list<int64_t> sizes) {
  for (int64_t n : sizes) dims_.emplace_back(n);
}

Shape::Shape(const std::vector<int64_t>& sizes) {
  for (int64_t n : sizes) dims_.emplace_back(n);
}

bool Shape::is_static() const {
  for (const Dim& d : dims_)
    if (!d.is_static()) return false;
  return true;
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (const Dim& d : dims_) {
    KILN_CHECK(d.is_static(), "numel() of symbolic shape ", str());
    n *= d.size;
  }
  return n;
}

std::vector<int64_t> Shape::sizes() const {
  std::vector<int64_t> out;
  for (const Dim& d : dims_) {
    KILN_CHECK(d.is_static(), "sizes() of symbolic shape ", str());
    out.push_back(d.size);
  }
  return out;
}

std::string Shape::str() const {
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) s += (i ? ", " : "") + dims_[i].str();
  return s + "]";
}

std::vector<int64_t> concretize(const Shape& s, const SymbolSizes& bindings) {
  std::vector<int64_t> out;
  for (const Dim& d : s.dims()) {
    if (d.is_static()) {
      out.push_back(d.size);
      continue;
    }
    auto it = bindings.find(d.sym);
    KILN_CHECK(it != bindings.end(), "symbol ", d.sym, " of shape ", s.str(), " is unbound");
    out.push_back(it->second);
  }
  return out;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& op) {
  int r = std::max(a.rank(), b.rank());
  std::vector<Dim> out(static_cast<size_t>(r), Dim(1));
  for (int i = 0; i < r; ++i) {  // i counts from the innermost dim
    int ia = a.rank() - 1 - i, ib = b.rank() - 1 - i;
    Dim da = ia >= 0 ? a[ia] : Dim(1);
    Dim db = ib >= 0 ? b[ib] : Dim(1);
    Dim& o = out[size_t(r - 1 - i)];
    if (da == db) {
      o = da;
    } else if (da.is_static() && da.size == 1) {
      o = db;
    } else if (db.is_static() && db.size == 1) {
      o = da;
    } else {
      user_error(op, ": shapes ", a.str(), " and ", b.str(),
                 " cannot be broadcast together: dimension ", r - 1 - i, " is ", da.str(),
                 " in one and ", db.str(),
                 " in the other; broadcasting needs equal sizes or a size of 1"
                 " (a dynamic dimension only matches itself)");
    }
  }
  return Shape(std::move(out));
}

int normalize_axis(int64_t axis, int rank, const std::string& op) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank || (rank == 0)) {
    user_error(op, ": axis ", axis, " is out of range for a tensor of rank ", rank,
               rank ? detail::concat("; valid axes are ", -rank, "..", rank - 1)
                    : std::string("; a 0-d tensor has no axes"));
  }
  return int(a);
}

}  // namespace kiln
