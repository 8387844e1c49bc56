#include "compare.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace kiln::fuzz {

double rtol_for(DType t) {
  switch (t) {
    case DType::F64: return 1e-9;
    case DType::F32: return 1e-4;
    case DType::F16: return 1e-2;
    case DType::BF16: return 4e-2;
    default: return 0;
  }
}

static double min_normal(DType t) {
  switch (t) {
    case DType::F64: return 2.3e-308;
    case DType::F16: return 6.2e-5;
    case DType::F32:
    case DType::BF16: return 1.2e-38;
    default: return 0;
  }
}

std::string Mismatch::str(const Tensor& t) const {
  std::string pos = "[";
  std::vector<int64_t> sizes = t.sizes();
  std::vector<int64_t> idx(sizes.size());
  int64_t rest = index;
  for (int d = int(sizes.size()) - 1; d >= 0; --d) {
    idx[size_t(d)] = sizes[size_t(d)] ? rest % sizes[size_t(d)] : 0;
    rest = sizes[size_t(d)] ? rest / sizes[size_t(d)] : 0;
  }
  for (size_t d = 0; d < idx.size(); ++d) pos += (d ? ", " : "") + std::to_string(idx[d]);
  pos += "]";
  char buf[256];
  std::snprintf(buf, sizeof buf, "at %s: got %.9g, want %.9g (|err| %.3g > allowed %.3g)", pos.c_str(), got, want,
                error, allowed);
  return buf;
}

std::optional<Mismatch> compare_values(const Tensor& got, const Tensor& want, const std::vector<double>& slack,
                                       bool tolerate_nonfinite) {
  std::vector<double> g = got.to_doubles(), w = want.to_doubles();
  const DType t = want.dtype();
  // The absolute floor scales with the tensor's largest finite magnitude: an f32 kernel
  // rounding a value near 1 also rounds the tiny tails beside it (gelu's, say) to 0.
  double scale = 0;
  for (double v : w)
    if (std::isfinite(v)) scale = std::max(scale, std::fabs(v));
  const double rtol = rtol_for(t), atol = 2 * min_normal(t) + rtol * 1e-3 * scale;
  std::optional<Mismatch> worst;
  double worst_ratio = 0;
  for (size_t i = 0; i < g.size() && i < w.size(); ++i) {
    const double s = i < slack.size() ? slack[i] : 0.0;
    if (std::isinf(s)) continue;  // unstable position: the reference cannot judge it
    const double a = g[i], b = w[i];
    if (tolerate_nonfinite && !(std::isfinite(a) && std::isfinite(b))) continue;
    double err, allowed = 0;
    if (std::isnan(a) || std::isnan(b)) {
      if (std::isnan(a) && std::isnan(b)) continue;
      err = std::numeric_limits<double>::infinity();
    } else if (std::isinf(a) || std::isinf(b)) {
      if (a == b) continue;
      err = std::numeric_limits<double>::infinity();
    } else {
      err = std::fabs(a - b);
      allowed = is_float(t) ? rtol * std::fabs(b) + atol + s : 0;
      if (err <= allowed) continue;
    }
    double ratio = allowed > 0 ? err / allowed : std::numeric_limits<double>::infinity();
    if (!worst || ratio > worst_ratio || (std::isinf(ratio) && std::isinf(worst_ratio) && !std::isinf(worst->error) && std::isinf(err))) {
      worst = Mismatch{int64_t(i), a, b, err, allowed};
      worst_ratio = ratio;
    }
  }
  return worst;
}

std::optional<Mismatch> compare_exact(const Tensor& got, const Tensor& want) {
  std::vector<double> g = got.to_doubles(), w = want.to_doubles();
  for (size_t i = 0; i < g.size() && i < w.size(); ++i) {
    if (std::isnan(g[i]) && std::isnan(w[i])) continue;
    if (g[i] == w[i] && std::signbit(g[i]) == std::signbit(w[i])) continue;
    return Mismatch{int64_t(i), g[i], w[i], std::fabs(g[i] - w[i]), 0};
  }
  return std::nullopt;
}

}  // namespace kiln::fuzz
