#include "core/tensor.h"

#include <cmath>
#include <cstring>
#include <sstream>

#include "core/error.h"
#include "core/memory.h"

namespace kiln {

namespace {

std::vector<int> halide_sizes(const std::vector<int64_t>& sizes) {
  std::vector<int> out(sizes.rbegin(), sizes.rend());
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0 || sizes[i] > INT32_MAX) {
      user_error("tensor dimension ", i, " has size ", sizes[i],
                 "; sizes must be in [0, 2^31)");
    }
  }
  return out;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) from (seed, index), independent of evaluation order.
double hashed_uniform(uint64_t seed, uint64_t index) {
  uint64_t h = splitmix64(splitmix64(seed) ^ (index * 0xd1b54a32d192ed03ull));
  return double(h >> 11) * (1.0 / 9007199254740992.0);
}

template <class Fn>
Tensor generate(const Shape& shape, DType dtype, Fn value_at) {
  Tensor t = empty(shape, dtype);
  void* base = t.mutable_data();
  const int64_t n = t.numel();
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) store_from_double(base, dtype, i, value_at(i));
  return t;
}

// A dense copy of `src`'s host data, in kiln's layout (the innermost dim contiguous).
// Buffer::copy() keeps the source's order of strides, and an empty tensor's strides have
// no order: a [3, 0] tensor's copy came back with the size-3 dim innermost.
Halide::Runtime::Buffer<void> dense_copy(const Halide::Runtime::Buffer<void>& src) {
  std::vector<int> sizes(size_t(src.dimensions()));
  for (int d = 0; d < src.dimensions(); ++d) sizes[size_t(d)] = src.dim(d).extent();
  Halide::Runtime::Buffer<void> out(src.type(), nullptr, sizes);
  out.allocate(detail::tracked_malloc, detail::tracked_free);
  if (out.number_of_elements() > 0) out.copy_from(src);
  return out;
}

}  // namespace

Tensor::Tensor(DType dtype, const std::vector<int64_t>& sizes) {
  // Halide indexes buffers in 32 bits: refuse here rather than fail in every op later.
  int64_t n = 1;
  for (int64_t s : sizes) {
    if (s < 0) user_error("a tensor cannot have a negative size: ", Shape(sizes).str());
    n = s == 0 || n == 0 ? 0 : (n > (int64_t(1) << 31) / s ? int64_t(1) << 31 : n * s);
  }
  if (n >= (int64_t(1) << 31)) {
    user_error("a tensor of shape ", Shape(sizes).str(), " has 2^31 elements or more; kiln's kernels index ",
               "in 32 bits, so a tensor holds at most 2^31 - 1 elements: split it (split, slice) into parts");
  }
  auto impl = std::make_shared<TensorImpl>();
  impl->meta = {dtype, Shape(sizes)};
  if (n == 0) {
    // No elements: no memory. (Halide sizes an allocation from the strides of the other
    // dims, so [4231, 0, 89229620] asked for terabytes; found by fuzzing read_npy.) The
    // host pointer is a shared, never-written block, as a pointer must not be null.
    // Halide's dense strides (a size 0 makes the strides outside it 0, which compiled
    // kernels expect), computed in 64 bits and 0 past 32: Halide's own overflow int for
    // [4231, 162551, 0, 89229620] (UBSan, read_npy). Nothing is addressed through them.
    alignas(128) static unsigned char nothing[128];
    const std::vector<int> extents = halide_sizes(sizes);
    std::vector<halide_dimension_t> dims(extents.size());
    int64_t stride = 1;
    for (size_t d = 0; d < extents.size(); ++d) {
      dims[d] = halide_dimension_t(0, extents[d], stride > INT32_MAX ? 0 : int32_t(stride));
      stride = stride > INT32_MAX ? 0 : stride * extents[d];
    }
    impl->buffer = Halide::Runtime::Buffer<void>(to_halide_type(dtype), nothing, int(dims.size()), dims.data());
  } else {
    impl->buffer = Halide::Runtime::Buffer<void>(to_halide_type(dtype), nullptr, halide_sizes(sizes));
    impl->buffer.allocate(detail::tracked_malloc, detail::tracked_free);
  }
  impl_ = std::move(impl);
}

const TensorMeta& Tensor::meta() const {
  if (!impl_) user_error("use of an undefined kiln::Tensor (default-constructed or moved-from)");
  return impl_->meta;
}

bool Tensor::is_symbolic() const { return impl_ && impl_->tracer != nullptr; }

Device Tensor::device() const {
  require_concrete("device()");
  return impl_->device;
}

void Tensor::require_concrete(const char* what) const {
  meta();
  if (is_symbolic()) {
    user_error("Tensor::", what, " was called on a traced tensor ", meta().str(),
               " inside a function being compiled by kiln::compile; traced tensors have no "
               "data. Return the tensor from the function and read the result instead");
  }
}

Halide::Runtime::Buffer<void>& Tensor::buffer() const {
  require_concrete("buffer()");
  return impl_->buffer;
}

const void* Tensor::data() const {
  require_concrete("data()");
  if (impl_->device.is_cuda() || impl_->buffer.device_dirty()) {
    user_error("Tensor::data(): the tensor's data is on the GPU; call to_host() first");
  }
  return impl_->buffer.data();
}

void* Tensor::mutable_data() {
  const void* p = data();
  impl_->buffer.set_host_dirty();
  return const_cast<void*>(p);
}

Tensor Tensor::to_host() const {
  require_concrete("to_host()");
  auto& buf = impl_->buffer;
  if (buf.device_dirty()) {
    if (int err = buf.copy_to_host(); err != 0) {
      user_error("to_host(): copying ", meta().str(), " from the GPU failed (Halide error ",
                 err, ")");
    }
  }
  if (!impl_->device.is_cuda()) return *this;
  auto impl = std::make_shared<TensorImpl>();
  impl->meta = impl_->meta;
  impl->buffer = dense_copy(buf);
  return Tensor(std::move(impl));
}

Tensor Tensor::to(Device device) const {
  require_concrete("to()");
  if (!device.is_cuda()) return to_host();
  if (impl_->device.is_cuda()) return *this;
  const halide_device_interface_t* iface = cuda_device_interface();
  Tensor out = clone();
  if (out.numel() == 0) {
    give_empty_buffer_a_device_handle(out.impl_->buffer);
  } else if (int err = out.impl_->buffer.copy_to_device(iface); err != 0) {
    user_error("to(cuda): copying ", meta().str(), " to the GPU failed (Halide error ", err, ")");
  }
  out.impl_->device = device;
  return out;
}

Tensor Tensor::clone() const {
  require_concrete("clone()");
  Tensor host = to_host();
  auto impl = std::make_shared<TensorImpl>();
  impl->meta = impl_->meta;
  impl->buffer = dense_copy(host.impl_->buffer);
  Tensor copy(std::move(impl));
  return impl_->device.is_cuda() ? copy.to(impl_->device) : copy;
}

std::vector<double> Tensor::to_doubles() const {
  Tensor host = to_host();
  const void* base = host.data();
  const int64_t n = numel();
  std::vector<double> out(static_cast<size_t>(n));
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) out[size_t(i)] = load_as_double(base, dtype(), i);
  return out;
}

double Tensor::item() const {
  if (numel() != 1) {
    user_error("Tensor::item() needs a tensor with exactly one element; this one is ",
               meta().str());
  }
  return to_doubles()[0];
}

std::string Tensor::str(int max_elements) const {
  std::ostringstream os;
  os << "tensor(" << meta().str();
  if (is_symbolic()) return os.str() + ", traced)";
  if (device().is_cuda()) os << ", cuda";
  std::vector<double> v = to_doubles();
  os << ", [";
  for (size_t i = 0; i < v.size() && int(i) < max_elements; ++i) os << (i ? ", " : "") << v[i];
  if (int64_t(v.size()) > max_elements) os << ", ...";
  os << "])";
  return os.str();
}

Tensor empty(const Shape& shape, DType dtype) {
  if (!shape.is_static()) {
    user_error("cannot allocate a tensor of symbolic shape ", shape.str(),
               "; give concrete sizes");
  }
  return Tensor(dtype, shape.sizes());
}

Tensor zeros(const Shape& shape, DType dtype) { return full(shape, 0.0, dtype); }
Tensor ones(const Shape& shape, DType dtype) { return full(shape, 1.0, dtype); }

Tensor full(const Shape& shape, double value, DType dtype) {
  return generate(shape, dtype, [value](int64_t) { return value; });
}

Tensor scalar_tensor(double value, DType dtype) { return full(Shape{}, value, dtype); }

Tensor from_vector(const std::vector<double>& values, const Shape& shape, DType dtype) {
  if (!shape.is_static() || int64_t(values.size()) != shape.numel()) {
    user_error("from_vector: ", values.size(), " values do not fill shape ", shape.str(),
               shape.is_static() ? detail::concat(" (", shape.numel(), " elements)") : "");
  }
  return generate(shape, dtype, [&](int64_t i) { return values[size_t(i)]; });
}

Tensor from_vector(const std::vector<float>& values, const Shape& shape) {
  return from_vector(std::vector<double>(values.begin(), values.end()), shape, DType::F32);
}
Tensor from_vector(const std::vector<int32_t>& values, const Shape& shape) {
  return from_vector(std::vector<double>(values.begin(), values.end()), shape, DType::I32);
}
Tensor from_vector(const std::vector<int64_t>& values, const Shape& shape) {
  Tensor t = empty(shape, DType::I64);
  if (int64_t(values.size()) != t.numel()) {
    user_error("from_vector: ", values.size(), " values do not fill shape ", shape.str());
  }
  if (!values.empty()) std::memcpy(t.mutable_data(), values.data(), values.size() * sizeof(int64_t));  // no null to memcpy
  return t;
}

Tensor rand(const Shape& shape, uint64_t seed, double low, double high, DType dtype) {
  return generate(shape, dtype, [=](int64_t i) {
    return low + (high - low) * hashed_uniform(seed, uint64_t(i));
  });
}

Tensor randn(const Shape& shape, uint64_t seed, DType dtype) {
  return generate(shape, dtype, [=](int64_t i) {
    double u1 = hashed_uniform(seed, 2 * uint64_t(i));
    double u2 = hashed_uniform(seed, 2 * uint64_t(i) + 1);
    return std::sqrt(-2.0 * std::log1p(-u1)) * std::cos(2.0 * M_PI * u2);
  });
}

namespace {
void require_same_shape(const Tensor& a, const Tensor& b, const char* fn) {
  if (a.shape() != b.shape()) {
    user_error(fn, ": shapes differ: ", a.meta().str(), " vs ", b.meta().str());
  }
}
}  // namespace

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  require_same_shape(a, b, "allclose");
  std::vector<double> x = a.to_doubles(), y = b.to_doubles();
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) || std::isnan(y[i])) {
      if (!(equal_nan && std::isnan(x[i]) && std::isnan(y[i]))) return false;
      continue;
    }
    if (std::isinf(x[i]) || std::isinf(y[i])) {
      if (x[i] != y[i]) return false;
      continue;
    }
    if (std::abs(x[i] - y[i]) > atol + rtol * std::abs(y[i])) return false;
  }
  return true;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  require_same_shape(a, b, "max_abs_diff");
  std::vector<double> x = a.to_doubles(), y = b.to_doubles();
  double m = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) != std::isnan(y[i])) return NAN;
    if (std::isnan(x[i]) || x[i] == y[i]) continue;  // also equal infinities
    m = std::max(m, std::abs(x[i] - y[i]));
  }
  return m;
}

double max_rel_diff(const Tensor& a, const Tensor& b, double floor) {
  require_same_shape(a, b, "max_rel_diff");
  std::vector<double> x = a.to_doubles(), y = b.to_doubles();
  double m = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) != std::isnan(y[i])) return NAN;
    if (std::isnan(x[i]) || x[i] == y[i]) continue;
    m = std::max(m, std::abs(x[i] - y[i]) / std::max(std::abs(y[i]), floor));
  }
  return m;
}

}  // namespace kiln
