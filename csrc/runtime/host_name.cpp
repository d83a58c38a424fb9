#include "host_name.h"

#include <c10/util/Exception.h>

namespace mps_ops {

const char* metal_type_name(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Bool: return "bool";
    case c10::ScalarType::Byte: return "uchar";
    case c10::ScalarType::Char: return "char";
    case c10::ScalarType::Short: return "short";
    case c10::ScalarType::Int: return "int";
    case c10::ScalarType::Long: return "long";
    case c10::ScalarType::UInt16: return "ushort";
    case c10::ScalarType::UInt32: return "uint";
    case c10::ScalarType::UInt64: return "ulong";
    case c10::ScalarType::Half: return "half";
    case c10::ScalarType::BFloat16: return "bfloat";
    case c10::ScalarType::Float: return "float";
    default: return nullptr;
  }
}

const char* variant_name(Variant variant) {
  switch (variant) {
    case Variant::dense: return "dense";
    case Variant::strided: return "strided";
    case Variant::dense_lhs_scalar: return "dense_lhs_scalar";
    case Variant::dense_rhs_scalar: return "dense_rhs_scalar";
    case Variant::reduce: return "reduce";
    case Variant::merge: return "merge";
    case Variant::count: break;
  }
  return "?";
}

std::string host_name(const char* op, Variant variant, c10::ScalarType out, c10::ScalarType in) {
  const char* out_name = metal_type_name(out);
  const char* in_name = metal_type_name(in);
  return std::string(op) + "_" + variant_name(variant) + "_" + (out_name ? out_name : "?") + "_" +
         (in_name ? in_name : "?");
}

namespace {
// Marks a looked-up name with no kernel, so a miss is not looked up again.
const KernelHandle* const missing = reinterpret_cast<const KernelHandle*>(uintptr_t(1));
}  // namespace

const KernelHandle* KernelCache::get(Variant variant, c10::ScalarType out, c10::ScalarType in) {
  const int index =
      (static_cast<int>(variant) * n_dtypes + static_cast<int>(out)) * n_dtypes + static_cast<int>(in);
  const KernelHandle* kernel = slots_[index].load(std::memory_order_acquire);
  if (kernel == nullptr) {
    const KernelHandle* found = backend().find_kernel(host_name(op_, variant, out, in));
    kernel = found ? found : missing;
    slots_[index].store(kernel, std::memory_order_release);
  }
  TORCH_CHECK_NOT_IMPLEMENTED(
      kernel != missing, "mps_ops: ", op_, " has no ", variant_name(variant), " kernel for output ",
      out, " and input ", in, " on the ", backend().name(), " backend (device ",
      c10::DeviceTypeName(backend().device_type(), true), ")");
  return kernel;
}

}  // namespace mps_ops
