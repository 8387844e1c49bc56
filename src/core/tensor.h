// kiln::Tensor: a dtype, a shape and either data or a place in a graph being traced.
//
// A concrete tensor wraps a dense Halide::Runtime::Buffer<void>. kiln shapes are
// row-major (dim 0 outermost) while Halide numbers dimensions innermost first, so
// kiln dim i is Halide dim rank-1-i. Device residency, dirty bits and copies come
// from Halide's buffer model.
//
// A symbolic tensor exists only while kiln::compile traces a function: it has a
// dtype and a (possibly symbolic) shape, and names a value of the graph being built.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "HalideBuffer.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/shape.h"

namespace kiln {

class Tracer;

struct TensorMeta {
  DType dtype = DType::F32;
  Shape shape;
  bool operator==(const TensorMeta& o) const { return dtype == o.dtype && shape == o.shape; }
  std::string str() const { return std::string(dtype_name(dtype)) + shape.str(); }
};

struct GradNode;  // autodiff/autograd.h: how a tensor was computed, for backward()
struct TensorImpl;

// PyTorch-style autograd state of a tensor.
struct AutogradMeta {
  bool requires_grad = false;
  std::shared_ptr<GradNode> node;      // null for a leaf
  int output_nr = 0;                   // which of the node's outputs this tensor is
  std::shared_ptr<TensorImpl> grad;    // a leaf's accumulated gradient
};

struct TensorImpl {
  TensorMeta meta;
  // Concrete tensors:
  Halide::Runtime::Buffer<void> buffer;
  Device device;
  // Symbolic tensors (while tracing):
  Tracer* tracer = nullptr;
  int value = -1;
  // Set when the tensor requires grad (a marked leaf, or computed from one).
  std::shared_ptr<AutogradMeta> autograd;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  // A new, uninitialized host tensor.
  Tensor(DType dtype, const std::vector<int64_t>& sizes);

  bool defined() const { return impl_ != nullptr; }
  const TensorMeta& meta() const;
  DType dtype() const { return meta().dtype; }
  const Shape& shape() const { return meta().shape; }
  std::vector<int64_t> sizes() const { return shape().sizes(); }
  int rank() const { return shape().rank(); }
  int64_t numel() const { return shape().numel(); }
  bool is_symbolic() const;
  Device device() const;

  // Data movement. to_host() makes the host copy current (copying from the GPU only
  // when the device copy is newer) and returns a CPU tensor; to(cuda) returns a tensor
  // whose data is on the GPU.
  Tensor to_host() const;
  Tensor to(Device device) const;
  // A deep copy on the same device.
  Tensor clone() const;

  // The underlying buffer (concrete tensors only).
  Halide::Runtime::Buffer<void>& buffer() const;
  // Raw host data; requires a CPU tensor whose host copy is current.
  const void* data() const;
  void* mutable_data();

  std::vector<double> to_doubles() const;  // copies to the host when needed
  template <class T>
  std::vector<T> to_vector() const {
    std::vector<double> v = to_doubles();
    return std::vector<T>(v.begin(), v.end());
  }
  double item() const;  // the single element of a one-element tensor
  std::string str(int max_elements = 8) const;

  TensorImpl* impl() const { return impl_.get(); }

  // PyTorch-style autograd (autodiff/autograd.cpp), on concrete tensors:
  //   Tensor x = randn({5}).requires_grad();  Tensor loss = sum(f(x));  loss.backward();  x.grad();
  // requires_grad() marks this tensor as a leaf that collects gradients and returns it.
  Tensor requires_grad(bool on = true) const;
  // True for a marked leaf and for anything computed from one while grad mode is on.
  bool needs_grad() const;
  // Accumulates d(this)/d(leaf) * grad into every leaf this depends on; grad may be left
  // out for a one-element tensor.
  void backward(const Tensor& grad = {}) const;
  // A leaf's accumulated gradient (undefined before any backward()).
  Tensor grad() const;
  void zero_grad() const;
  // The same data, cut from the autograd graph.
  Tensor detach() const;

 private:
  void require_concrete(const char* what) const;
  std::shared_ptr<TensorImpl> impl_;
};

// Constructors. Shapes are row-major; all tensors are created on the host.
Tensor empty(const Shape& shape, DType dtype = DType::F32);
Tensor zeros(const Shape& shape, DType dtype = DType::F32);
Tensor ones(const Shape& shape, DType dtype = DType::F32);
Tensor full(const Shape& shape, double value, DType dtype = DType::F32);
Tensor scalar_tensor(double value, DType dtype = DType::F32);
Tensor from_vector(const std::vector<double>& values, const Shape& shape,
                   DType dtype = DType::F32);
Tensor from_vector(const std::vector<float>& values, const Shape& shape);
Tensor from_vector(const std::vector<int32_t>& values, const Shape& shape);
Tensor from_vector(const std::vector<int64_t>& values, const Shape& shape);
// Seeded random fills: the same seed gives the same values on any machine and thread
// count (each element hashes (seed, index)).
Tensor rand(const Shape& shape, uint64_t seed = 0, double low = 0.0, double high = 1.0,
            DType dtype = DType::F32);
Tensor randn(const Shape& shape, uint64_t seed = 0, DType dtype = DType::F32);

// Comparison: |a - b| <= atol + rtol * |b| elementwise, shapes equal (no broadcasting).
// NaNs compare equal to NaNs when equal_nan.
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
              bool equal_nan = false);
// The largest |a - b| (NaN when exactly one side is NaN at some position).
double max_abs_diff(const Tensor& a, const Tensor& b);
double max_rel_diff(const Tensor& a, const Tensor& b, double floor = 1e-6);

}  // namespace kiln
