// Drives a kernel through mps_ops' C ABI, as AOTInductor-style C++ would:
// library from source, kernel by name, arguments by index, dispatch; then
// the error paths. Built and run by test/test_c_abi.py; on Linux the kernel
// runs on the emulator. Prints "N passed, M failed".
#include <Python.h>

#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/ones.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "mps_ops_c_abi.h"

static int passed = 0, failed = 0;

static void expect(bool ok, const char* what) {
  if (ok) {
    ++passed;
  } else {
    ++failed;
    std::printf("FAILED: %s (last error: %s)\n", what, mps_ops_last_error());
  }
}

static void count_call(void* context) { ++*static_cast<int*>(context); }

static bool one_line_error() { return std::strchr(mps_ops_last_error(), '\n') == nullptr; }

// Each thread drives its own kernel handle of one library: no interference.
static bool threads_with_own_kernels(mps_ops_library library) {
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      mps_ops_kernel k = nullptr;
      at::Tensor x = at::arange(64, at::kFloat), y = at::ones({64}, at::kFloat);
      bool good = mps_ops_get_kernel_function(library, "axpy", &k) == MPS_OPS_OK;
      for (int round = 0; round < 20 && good; ++round) {
        good = mps_ops_start_encoding(k) == MPS_OPS_OK && mps_ops_set_arg_tensor(k, 0, &y) == MPS_OPS_OK &&
               mps_ops_set_arg_tensor(k, 1, &x) == MPS_OPS_OK && mps_ops_set_arg_float(k, 2, 1.0f) == MPS_OPS_OK &&
               mps_ops_set_arg_int(k, 3, 0) == MPS_OPS_OK && mps_ops_dispatch_single(k, 64) == MPS_OPS_OK;
      }
      good = good && y[63].item<float>() == 1.0f + 20 * 63.0f && mps_ops_delete_kernel_function(k) == MPS_OPS_OK;
      ok[t] = good;
    });
  }
  for (auto& thread : threads) thread.join();
  return ok == std::vector<int>(4, 1);
}

// Encoding inside a command block, as AOTI-style code does, with a torch op
// between the dispatches (on Metal the block runs outside the stream's queue,
// so torch's own MPS ops in it work as anywhere else).
struct BlockWork {
  mps_ops_kernel kernel;
  at::Tensor* y;
  at::Tensor* x;
  mps_ops_status status;
};
static void dispatch_in_block(void* context) {
  auto* w = static_cast<BlockWork*>(context);
  w->status = mps_ops_start_encoding(w->kernel) | mps_ops_set_arg_tensor(w->kernel, 0, w->y) |
              mps_ops_set_arg_tensor(w->kernel, 1, w->x) | mps_ops_set_arg_float(w->kernel, 2, 1.0f) |
              mps_ops_set_arg_int(w->kernel, 3, 0) | mps_ops_dispatch_single(w->kernel, 10);
  w->y->add_(1.0f);
}

int main() {
  Py_Initialize();
  if (PyRun_SimpleString("import torch, mps_ops") != 0) return 2;

  const char* source =
      "#include <metal_stdlib>\n"
      "using namespace metal;\n"
      "kernel void axpy(device float* y [[buffer(0)]], device const float* x [[buffer(1)]],\n"
      "                 constant float& a [[buffer(2)]], constant long& offset [[buffer(3)]],\n"
      "                 uint i [[thread_position_in_grid]]) {\n"
      "  y[i] += a * x[i] + float(offset);\n"
      "}\n"
      "kernel void reverse_in_group(device float* y [[buffer(0)]], threadgroup float* scratch [[threadgroup(0)]],\n"
      "                             uint i [[thread_position_in_grid]], uint t [[thread_position_in_threadgroup]],\n"
      "                             uint n [[threads_per_threadgroup]]) {\n"
      "  scratch[t] = y[i];\n"
      "  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
      "  y[i] = scratch[n - 1 - t];\n"
      "}\n";
  mps_ops_library library = nullptr;
  expect(mps_ops_create_shader_library(source, &library) == MPS_OPS_OK, "create_shader_library");
  mps_ops_kernel kernel = nullptr;
  expect(mps_ops_get_kernel_function(library, "axpy", &kernel) == MPS_OPS_OK, "get_kernel_function");

  at::Tensor x = at::arange(10, at::kFloat);
  at::Tensor y = at::ones({10}, at::kFloat);
  expect(mps_ops_start_encoding(kernel) == MPS_OPS_OK, "start_encoding");
  expect(mps_ops_set_arg_tensor(kernel, 0, &y) == MPS_OPS_OK, "set_arg_tensor y");
  expect(mps_ops_set_arg_tensor(kernel, 1, &x) == MPS_OPS_OK, "set_arg_tensor x");
  expect(mps_ops_set_arg_float(kernel, 2, 2.0f) == MPS_OPS_OK, "set_arg_float");
  expect(mps_ops_set_arg_int(kernel, 3, 100) == MPS_OPS_OK, "set_arg_int");
  expect(mps_ops_dispatch_single_with_group_size(kernel, 10, 4) == MPS_OPS_OK, "dispatch");
  bool right = true;
  for (int i = 0; i < 10; ++i) right &= y[i].item<float>() == 1.0f + 2.0f * i + 100.0f;
  expect(right, "y == 1 + 2x + 100");

  // One value updated before each of many dispatches, without start_encoding:
  // the slot's bytes are reused (the inline arena held some 60 updates).
  bool updates_ok = true;
  for (int64_t k = 0; k < 200; ++k) {
    updates_ok &= mps_ops_set_arg_int(kernel, 3, k) == MPS_OPS_OK && mps_ops_dispatch_single(kernel, 10) == MPS_OPS_OK;
  }
  // y gained 2x + k for each k in [0, 200): 400 x + 19900.
  expect(updates_ok && y[3].item<float>() == 1.0f + 6.0f + 100.0f + 200 * 6.0f + 19900.0f,
         "200 updates of one argument between dispatches");
  y.fill_(1.0f);
  expect(mps_ops_dispatch_single(kernel, 10) == MPS_OPS_OK && y[9].item<float>() == 1.0f + 18.0f + 199.0f,
         "the last update is what the next dispatch reads");
  y.fill_(1.0f);
  expect(mps_ops_set_arg_int(kernel, 3, 100) == MPS_OPS_OK && mps_ops_dispatch_single(kernel, 10) == MPS_OPS_OK &&
             y[9].item<float>() == 1.0f + 18.0f + 100.0f,
         "back to offset 100");

  // 2-D dispatch over the same kernel: a grid of (10, 1) covers the 10 elements again.
  const uint64_t grid[2] = {10, 1}, group[2] = {5, 1};
  expect(mps_ops_dispatch_array_with_group_size(kernel, grid, 2, group, 2) == MPS_OPS_OK, "dispatch_array");
  expect(y[9].item<float>() == 1.0f + 2 * (2.0f * 9 + 100.0f), "second dispatch accumulated");

  // A [[threadgroup(0)]] argument: its length set through the C ABI.
  mps_ops_kernel reverse = nullptr;
  at::Tensor r = at::arange(8, at::kFloat);
  expect(mps_ops_get_kernel_function(library, "reverse_in_group", &reverse) == MPS_OPS_OK &&
             mps_ops_start_encoding(reverse) == MPS_OPS_OK && mps_ops_set_arg_tensor(reverse, 0, &r) == MPS_OPS_OK,
         "reverse_in_group bound");
  expect(mps_ops_dispatch_single_with_group_size(reverse, 8, 4) == MPS_OPS_ERROR &&
             std::strstr(mps_ops_last_error(), "threadgroup") != nullptr,
         "a threadgroup argument with no length is refused");
  expect(mps_ops_set_threadgroup_memory(reverse, 0, 4 * sizeof(float)) == MPS_OPS_OK &&
             mps_ops_dispatch_single_with_group_size(reverse, 8, 4) == MPS_OPS_OK && r[0].item<float>() == 3.0f &&
             r[3].item<float>() == 0.0f && r[4].item<float>() == 7.0f,
         "set_threadgroup_memory: each group of 4 reversed");
  expect(mps_ops_set_threadgroup_memory(reverse, 31, 16) == MPS_OPS_ERROR, "threadgroup index past the table");
  expect(mps_ops_delete_kernel_function(reverse) == MPS_OPS_OK, "delete reverse_in_group");

  int calls = 0;
  expect(mps_ops_run_command_block(&count_call, &calls) == MPS_OPS_OK && calls == 1, "run_command_block");
  at::Tensor z = at::ones({10}, at::kFloat);
  BlockWork work{kernel, &z, &x, MPS_OPS_ERROR};
  expect(mps_ops_run_command_block(&dispatch_in_block, &work) == MPS_OPS_OK && work.status == MPS_OPS_OK &&
             z[9].item<float>() == 11.0f,
         "a dispatch and a torch op inside run_command_block");
  expect(mps_ops_dispatch_single(kernel, 0) == MPS_OPS_OK, "an empty grid dispatches nothing, no crash");

  // Errors: codes, never exceptions or crashes, and a message.
  mps_ops_kernel missing = nullptr;
  expect(mps_ops_get_kernel_function(library, "nope", &missing) == MPS_OPS_ERROR &&
             std::strstr(mps_ops_last_error(), "nope") != nullptr,
         "unknown kernel name is an error");
  expect(mps_ops_set_arg_int(kernel, 40, 1) == MPS_OPS_ERROR &&
             std::strstr(mps_ops_last_error(), "index 40") != nullptr,
         "out-of-range argument index is an error");
  expect(mps_ops_set_arg_int(reinterpret_cast<mps_ops_kernel>(&calls), 0, 1) == MPS_OPS_ERROR &&
             std::strstr(mps_ops_last_error(), "invalid kernel handle") != nullptr,
         "a foreign pointer is an invalid handle");
  mps_ops_library broken = nullptr;
  expect(mps_ops_create_shader_library("kernel void broken( {", &broken) == MPS_OPS_ERROR &&
             std::strlen(mps_ops_last_error()) > 0 && one_line_error(),
         "a source that does not compile is an error, in one line");
  expect(mps_ops_start_encoding(kernel) == MPS_OPS_OK &&
             mps_ops_set_arg_bytes(kernel, 2, &calls, SIZE_MAX) == MPS_OPS_ERROR &&
             std::strstr(mps_ops_last_error(), "bytes of inline kernel arguments") != nullptr,
         "set_arg_bytes with a huge size is an error, not an overflow");
  expect(one_line_error(), "last_error is one line, without a backtrace");

  // A kernel handle being encoded by one thread refuses calls from another.
  mps_ops_status from_other_thread = MPS_OPS_OK;
  std::thread([&] { from_other_thread = mps_ops_set_arg_int(kernel, 3, 1); }).join();
  expect(from_other_thread == MPS_OPS_ERROR, "another thread cannot bind into a kernel being encoded");
  expect(threads_with_own_kernels(library), "threads with their own kernel handles run side by side");

  expect(mps_ops_delete_kernel_function(kernel) == MPS_OPS_OK, "delete_kernel_function");
  expect(mps_ops_dispatch_single(kernel, 1) == MPS_OPS_ERROR, "a deleted kernel is an invalid handle");
  // Handles are never reused: a new kernel never answers to a deleted one's handle.
  mps_ops_kernel replacement = nullptr;
  expect(mps_ops_get_kernel_function(library, "axpy", &replacement) == MPS_OPS_OK && replacement != kernel &&
             mps_ops_start_encoding(kernel) == MPS_OPS_ERROR,
         "a deleted handle stays invalid after a new kernel is made");
  expect(mps_ops_delete_kernel_function(replacement) == MPS_OPS_OK, "delete the replacement");
  expect(mps_ops_delete_shader_library(library) == MPS_OPS_OK, "delete_shader_library");

  std::printf("c_abi: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
