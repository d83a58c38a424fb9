// Kernel instantiation under host names: the macros every kernel file uses,
// whatever its kernel's shape (element-wise, reduction, pooling, ...).
//
// Host names follow the one grammar `<op>_<variant>_<out dtype>_<in dtype>`
// with Metal type names; the host builds the same names in
// csrc/runtime/host_name.cpp. Variants: dense, strided, dense_lhs_scalar,
// dense_rhs_scalar, reduce, merge (a split reduction's second pass).
#pragma once

#include <mps_ops/dtype_sets.h>

// Instantiates the kernel template KERNEL<args...> under HOST_NAME.
#define MPS_OPS_INSTANTIATE(HOST_NAME, KERNEL, ...) \
  template [[host_name(HOST_NAME)]] [[kernel]] decltype(KERNEL<__VA_ARGS__>) KERNEL<__VA_ARGS__>;

#define MPS_OPS_HOST_NAME(OP, VARIANT, OUT, IN) #OP "_" #VARIANT "_" #OUT "_" #IN

// A kernel template of one type parameter, KERNEL<T>, as
// `<KERNEL>_<VARIANT>_<T>_<T>`. With a dtype set:
//   MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, fused_adagrad, dense)
#define MPS_OPS_INSTANTIATE_FOR_TYPE(KERNEL, VARIANT, T) \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(KERNEL, VARIANT, T, T), KERNEL, T)
