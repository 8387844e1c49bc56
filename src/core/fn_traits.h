// Turns a C++ function over tensors (Tensor(const Tensor&, ...), a lambda, or
// std::vector<Tensor>(const std::vector<Tensor>&)) into the one form the pipeline works
// with: a function from a vector of tensors to a vector of tensors.
#pragma once

#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"

namespace kiln {

using TensorFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

namespace detail {

template <class R, class... A>
struct signature {
  using result = R;
  static constexpr size_t arity = sizeof...(A);
  using first = std::tuple_element_t<0, std::tuple<std::decay_t<A>..., void>>;
};
template <class T> struct fn_traits : fn_traits<decltype(&std::decay_t<T>::operator())> {};
template <class C, class R, class... A> struct fn_traits<R (C::*)(A...) const> : signature<R, A...> {};
template <class C, class R, class... A> struct fn_traits<R (C::*)(A...)> : signature<R, A...> {};
template <class R, class... A> struct fn_traits<R (*)(A...)> : signature<R, A...> {};
template <class R, class... A> struct fn_traits<R(A...)> : signature<R, A...> {};

inline std::vector<Tensor> as_outputs(Tensor t) { return {std::move(t)}; }
inline std::vector<Tensor> as_outputs(std::vector<Tensor> v) { return v; }

template <class F, size_t... I>
TensorFn wrap(F fn, std::index_sequence<I...>) {
  return [fn](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    if (in.size() != sizeof...(I)) {
      throw Error("compiled function takes " + std::to_string(sizeof...(I)) +
                  " tensors, got " + std::to_string(in.size()));
    }
    return as_outputs(fn(in[I]...));
  };
}

}  // namespace detail

// `fn` as a TensorFn (a function of N tensors checks that it gets N).
template <class F>
TensorFn as_tensor_fn(F fn) {
  using traits = detail::fn_traits<F>;
  if constexpr (traits::arity == 1 && std::is_same_v<typename traits::first, std::vector<Tensor>>) {
    return [fn](const std::vector<Tensor>& in) { return detail::as_outputs(fn(in)); };
  } else {
    return detail::wrap(fn, std::make_index_sequence<traits::arity>{});
  }
}

}  // namespace kiln
