// The generic part of every kernel-library generator: inputs and the output come from the
// generator's KernelSpec (kernel_spec.h), the algorithm from tracing and lowering kiln's
// own ops, the schedule from the `schedule` GeneratorParam:
//   manual   the hand-written file for the target (schedules/cpu, schedules/cuda);
//   default  kiln's default rules;
// and, when the generator's `autoscheduler` is set, only the estimates (Halide schedules).
// A generator is then a name and its parameters:
//
//   class Matmul : public kiln::kernels::OpGenerator<Matmul> {
//    public:
//     static constexpr const char* kName = "kiln_matmul";
//     kiln::kernels::Params params() const { return {}; }
//   };
//   HALIDE_REGISTER_GENERATOR(Matmul, kiln_matmul)
#pragma once

#include <Halide.h>

#include "kernel_spec.h"
#include "lower/bf16_bits.h"

namespace kiln::kernels {

// The default of a registered generator's parameter, for its GeneratorParam.
std::string default_param(const std::string& generator, const std::string& param);

template <class T>
class OpGenerator : public Halide::Generator<T> {
 public:
  Halide::GeneratorParam<std::string> schedule_kind{"schedule", "default"};

  void configure() {
    spec_ = make_spec(T::kName, static_cast<const T*>(this)->params());
    Graph graph = trace_spec(spec_);
    for (const KernelInput& in : spec_.inputs) {
      inputs_.push_back(
          this->template add_input<Halide::Buffer<>>(in.name, algo::halide_type(in.dtype), int(in.estimate.size())));
    }
    const TensorMeta& om = graph.node(graph.outputs()[0]).meta;
    out_ = this->template add_output<Halide::Buffer<>>("out", algo::halide_type(om.dtype), om.shape.rank());
  }

  void generate() {
    Graph graph = trace_spec(spec_);
    std::vector<Halide::Func> funcs;
    std::vector<std::vector<Halide::Expr>> extents;
    for (size_t k = 0; k < inputs_.size(); ++k) {
      const Shape& shape = graph.node(graph.inputs()[k]).meta.shape;
      const int r = shape.rank();
      std::vector<Halide::Expr> e(static_cast<size_t>(r));
      for (int d = 0; d < r; ++d) {
        auto dim = inputs_[k]->dim(r - 1 - d);
        dim.set_min(0);  // kiln tensors are dense and zero-based
        if (shape[d].is_static()) dim.set_extent(int(shape[d].size));
        e[size_t(d)] = dim.extent();
      }
      funcs.push_back(*inputs_[k]);
      extents.push_back(e);
    }
    lowered_ = lower_spec(spec_, funcs, extents, *out_, this->get_target());
    lower_half_casts_for(this->get_target(), {*out_});
  }

  void schedule() {
    for (size_t k = 0; k < inputs_.size(); ++k) inputs_[k]->set_estimates(estimate_region(spec_.inputs[k].estimate));
    out_->set_estimates(estimate_region(output_at_estimates(spec_).shape.sizes()));
    if (this->using_autoscheduler()) return;
    apply_named_schedule(schedule_kind, T::kName, lowered_, this->get_target());
  }

 private:
  KernelSpec spec_;
  std::vector<Halide::GeneratorInput<Halide::Buffer<>>*> inputs_;
  Halide::GeneratorOutput<Halide::Buffer<>>* out_ = nullptr;
  LoweredGraph lowered_;
};

}  // namespace kiln::kernels
