// The CUDA backend (Backend, csrc/runtime/backend.h).
//
// Kernels: one CUmodule per PTX file, JIT-loaded through the driver API
// (driver_api.h) on a device's primary context the first time one of its
// kernels runs there; torch's runtime API uses the same primary context, so
// device pointers of torch's tensors are valid in our launches.
//
// Dispatch follows launch_abi.h: a threadgroup is a 1-D block of
// group.x*y*z threads, every threadgroup folded into gridDim.x, buffers by
// device address (storage + byte offset), [[threadgroup(N)]] arguments at
// 16-aligned offsets of dynamic shared memory. The launch goes on torch's
// current stream of its current CUDA device, so it is ordered with torch's
// own kernels on the tensors, as Metal encodes on torch's MPS stream.
// Launch errors raise here; faults inside a kernel surface at the next
// synchronisation, or right after the launch with MPS_OPS_CUDA_SYNC=1.
#include "cuda_backend.h"

#include "../runtime/declared_slots.h"
#include "driver_api.h"
#include "kernel_list.h"
#include "mps_ops_cuda/launch_abi.h"
#include "torch_cuda.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>

namespace mps_ops {

using namespace cuda_driver;

// One entry of kernels.txt, with its function on each device once loaded.
struct KernelHandle {
  cuda::KernelListEntry entry;
  size_t file = 0;  // index into the backend's PTX files
  struct Loaded {
    CUfunction function = nullptr;
    uint32_t max_threads = 0;     // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
    uint32_t static_shared = 0;   // bytes of `static __shared__` (threadgroup declarations)
  };
  std::map<int, Loaded> per_device;  // guarded by the backend's mutex
  bool logged = false;               // written to MPS_OPS_LAUNCH_LOG; guarded likewise
};

namespace {

// Metal's limits on Apple GPUs, kept so that a dispatch fails here where it
// would fail on a Mac (and on the emulator): threads per threadgroup and
// threadgroup memory (maxThreadgroupMemoryLength). Under 48 KiB of dynamic
// shared memory CUDA needs no cuFuncSetAttribute opt-in.
constexpr uint32_t max_group_threads = 1024;
constexpr uint64_t max_threadgroup_bytes = 32768;
// gridDim.x's limit: every threadgroup is folded into it (launch_abi.h).
constexpr uint64_t max_grid_x = 2147483647u;
// setThreadgroupMemoryLength's granule; launch_abi.h places arguments 16-aligned.
constexpr uint64_t threadgroup_granule = 16;

static_assert(mps_ops_cuda::max_buffers == max_kernel_args, "one argument table size");
static_assert(mps_ops_cuda::max_threads_per_group == max_group_threads, "the entries' launch bounds");

uint64_t round_up(uint64_t n, uint64_t granule) {
  return (n + granule - 1) / granule * granule;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  TORCH_CHECK(in.good(), "mps_ops cuda: cannot open ", path);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// MPS_OPS_LAUNCH_LOG=FILE: each host name is appended to FILE the first time
// it launches in this process, so tools/gpu_check.sh can say which kernels
// ran on the GPU (and under each sanitizer) and which never did.
const char* launch_log() {
  static const char* path = [] {
    const char* v = std::getenv("MPS_OPS_LAUNCH_LOG");
    return v != nullptr && v[0] != '\0' ? v : nullptr;
  }();
  return path;
}

// A switch read from the environment: on when NAME=1.
bool switched_on(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, "1") == 0;
}

// MPS_OPS_CUDA_REVERSE_GROUPS=1: threadgroups in reverse order (launch_abi.h).
bool reverse_groups() {
  static const bool on = switched_on("MPS_OPS_CUDA_REVERSE_GROUPS");
  return on;
}

bool sync_after_launch() {
  static const bool on = switched_on("MPS_OPS_CUDA_SYNC");
  return on;
}

class CudaBackend final : public Backend {
 public:
  const char* name() const override { return "cuda"; }
  c10::DeviceType device_type() const override { return c10::DeviceType::CUDA; }

  KernelHandle* find_kernel(const std::string& host_name) override {
    std::lock_guard<std::mutex> lock(mutex_);
    load_table();
    auto it = kernels_.find(host_name);
    return it == kernels_.end() ? nullptr : it->second.get();
  }

  const char* kernel_name(const KernelHandle* kernel) const override {
    return kernel->entry.host_name.c_str();
  }

  uint32_t max_threads_per_group(const KernelHandle* kernel) const override {
    const c10::Device device = cuda::current_device();
    std::lock_guard<std::mutex> lock(mutex_);
    return loaded(const_cast<KernelHandle*>(kernel), device.index()).max_threads;
  }

  void dispatch(const KernelHandle* kernel, const ArgSlot* args, int count,
                const uint32_t* threadgroup_lengths, Dim3 threads, Dim3 group) override;

  // compile_shader would need clang >= 19 and the prepass at run time, which
  // the GPU machine does not have: a library is a source tools/cuda_build.py
  // compiled ahead (test/kernels/), found by its key (mps_ops/_prepass.py
  // shader_key, which compile_shader passes here) in <PTX dir>/shaders/.
  void* load_library(const std::string& key) override {
    std::lock_guard<std::mutex> lock(mutex_);
    load_table();
    auto found = libraries_.find(key);
    if (found != libraries_.end()) return found->second.get();
    const std::string list = dir_ + "/shaders/" + key + ".txt";
    TORCH_CHECK_NOT_IMPLEMENTED(std::ifstream(list).good(),
                                "mps_ops: compile_shader on the cuda backend runs only sources "
                                "tools/cuda_build.py compiled ahead (the .metal files of test/kernels/); "
                                "this source (key ", key, ") is not one of them, or build/cuda is stale");
    auto library = std::make_unique<Library>();
    for (auto& e : cuda::read_kernel_list_file(list)) {
      auto handle = std::make_unique<KernelHandle>();
      handle->file = file_index(e.ptx_file);
      handle->entry = std::move(e);
      library->kernels[handle->entry.host_name] = std::move(handle);
    }
    return (libraries_[key] = std::move(library)).get();
  }
  std::vector<std::string> library_kernel_names(void* library) override {
    std::vector<std::string> out;
    for (const auto& kv : static_cast<Library*>(library)->kernels) out.push_back(kv.first);
    return out;
  }
  KernelHandle* find_library_kernel(void* library, const std::string& name) override {
    auto& kernels = static_cast<Library*>(library)->kernels;
    auto it = kernels.find(name);
    return it == kernels.end() ? nullptr : it->second.get();
  }
  void* load_metallib(const void*, size_t) override {
    TORCH_CHECK_NOT_IMPLEMENTED(false, "mps_ops: a .metallib holds compiled Apple GPU code, which "
                                       "the cuda backend cannot run");
  }

  // Every dispatch enqueues on torch's current stream by itself.
  void run_command_block(void (*fn)(void*), void* context) override { fn(context); }

  // Pinned host memory mapped into every context (portable): kernels write
  // it through the bus and the host reads it after a stream wait, with no
  // memset or copy on the stream (on a sandboxed machine a pageable copy
  // back cost tens of microseconds of idle GPU per call).
  HostVisible allocate_host_visible(size_t bytes) override {
    const Driver& d = driver();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      device_state(cuda::current_device().index());  // a context current for the mapping
    }
    void* host = nullptr;
    check(d.cuMemHostAlloc(&host, bytes, memhostalloc_portable | memhostalloc_devicemap),
          "cuMemHostAlloc of " + std::to_string(bytes) + " bytes for kernel flags");
    CUdeviceptr on_device = 0;
    check(d.cuMemHostGetDevicePointer(&on_device, host, 0), "cuMemHostGetDevicePointer");
    std::memset(host, 0, bytes);
    return HostVisible{reinterpret_cast<const void*>(static_cast<uintptr_t>(on_device)), host};
  }

  // The stream sets `done` after everything before it (its default fence
  // orders the kernels' flag stores first) and the waiting host spins on the
  // word in place, asking the driver nothing until then: on one start of the
  // sandboxed H200, cuStreamSynchronize returned tens of microseconds late
  // (on others the two waits measured alike: docs/design.md, "The CUDA
  // backend"). MPS_OPS_CUDA_WAIT_BY_SYNC=1 (the comparison), or a driver
  // that cannot write host memory from a stream: the mark synchronizes
  // the stream and sets the word itself.
  const void* mark_when_done(const DoneWord& done) override {
    const c10::Device device = cuda::current_device();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      device_state(device.index());
    }
    const Driver& d = driver();
    const auto stream = static_cast<CUstream>(cuda::current_stream(device));
    if (stream_writes_host_memory_.load(std::memory_order_relaxed)) {
      const CUdeviceptr word = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(done.storage)) + done.offset;
      const CUresult written = d.cuStreamWriteValue32(stream, word, 1, CU_STREAM_WRITE_VALUE_DEFAULT);
      if (written == CUDA_SUCCESS) {
        return stream;
      }
      TORCH_CHECK(written == CUDA_ERROR_NOT_SUPPORTED || written == CUDA_ERROR_INVALID_VALUE,
                  "mps_ops cuda: marking the GPU's progress (cuStreamWriteValue32): ", describe(written));
      stream_writes_host_memory_.store(false, std::memory_order_relaxed);
    }
    check(d.cuStreamSynchronize(stream), "waiting for the GPU (cuStreamSynchronize)");
    __atomic_store_n(const_cast<int32_t*>(done.host), 1, __ATOMIC_RELEASE);
    return stream;
  }

  // A fault inside a kernel raises here: cuStreamQuery of the marked
  // stream, at most once a millisecond, reports it, after which the store
  // never comes. So does a mark that never ran although its stream is done
  // (captured into a CUDA graph instead): its word is then retired unread.
  void wait_until_marked(const DoneWord& done, const void* stream) override {
    spin_until_set(done, static_cast<CUstream>(const_cast<void*>(stream)));
  }

  std::vector<std::string> names() {
    std::lock_guard<std::mutex> lock(mutex_);
    load_table();
    std::vector<std::string> out;
    for (const auto& kv : kernels_) out.push_back(kv.first);
    return out;  // std::map: sorted
  }

 private:
  static void spin_until_set(const DoneWord& done, CUstream stream) {
    using clock = std::chrono::steady_clock;
    auto last_query = clock::now();
    // Set once the stream is done: the word may reach the host a moment
    // after the driver reports the stream idle.
    std::optional<clock::time_point> stream_done;
    for (unsigned spins = 1; __atomic_load_n(done.host, __ATOMIC_ACQUIRE) == 0; ++spins) {
      cpu_relax();
      if (spins % 256 != 0 || clock::now() - last_query < std::chrono::milliseconds(1)) continue;
      last_query = clock::now();
      if (stream_done) {
        TORCH_CHECK(last_query - *stream_done < std::chrono::milliseconds(100),
                    "mps_ops cuda: the stream finished without running the mark that follows a flagged op's "
                    "kernels (was it captured into a CUDA graph? ops that check their input on the GPU cannot be)");
        continue;
      }
      const CUresult state = driver().cuStreamQuery(stream);
      TORCH_CHECK(state == CUDA_SUCCESS || state == CUDA_ERROR_NOT_READY,
                  "mps_ops cuda: waiting for the GPU (cuStreamQuery): ", describe(state));
      if (state == CUDA_SUCCESS) stream_done = last_query;
    }
    // The flag's words are read after the done word.
    std::atomic_thread_fence(std::memory_order_acquire);
  }

  static void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }

  struct Device {
    CUcontext context = nullptr;
    std::vector<CUmodule> modules;  // per PTX file, null until loaded
  };

  // A compile_shader library: the kernels of one prebuilt source.
  struct Library {
    std::map<std::string, std::unique_ptr<KernelHandle>> kernels;
  };

  // kernels.txt, read once. Caller holds mutex_.
  void load_table() const {
    if (!kernels_.empty()) return;
    dir_ = cuda::ptx_directory();
    for (auto& e : cuda::read_kernel_list(dir_)) {
      auto handle = std::make_unique<KernelHandle>();
      handle->file = file_index(e.ptx_file);
      handle->entry = std::move(e);
      kernels_[handle->entry.host_name] = std::move(handle);
    }
  }

  // The index of a PTX file (relative to dir_) in files_, added if new.
  // Caller holds mutex_.
  size_t file_index(const std::string& ptx_file) const {
    auto found = std::find(files_.begin(), files_.end(), ptx_file);
    if (found != files_.end()) return static_cast<size_t>(found - files_.begin());
    files_.push_back(ptx_file);
    return files_.size() - 1;
  }

  // The device's primary context (the one torch's runtime API uses), made
  // current on this thread if it is not. Caller holds mutex_.
  Device& device_state(int ordinal) const {
    const Driver& d = driver();
    Device& state = devices_[ordinal];
    if (state.context == nullptr) {
      CUdevice device = 0;
      check(d.cuDeviceGet(&device, ordinal), "cuDeviceGet(" + std::to_string(ordinal) + ")");
      check(d.cuDevicePrimaryCtxRetain(&state.context, device), "cuDevicePrimaryCtxRetain");
      state.modules.assign(files_.size(), nullptr);
    }
    CUcontext current = nullptr;
    check(d.cuCtxGetCurrent(&current), "cuCtxGetCurrent");
    if (current != state.context) check(d.cuCtxSetCurrent(state.context), "cuCtxSetCurrent");
    return state;
  }

  CUmodule module(Device& state, size_t file) const {
    // A library loaded after the device was set up adds PTX files.
    if (state.modules.size() < files_.size()) state.modules.resize(files_.size(), nullptr);
    if (state.modules[file] != nullptr) return state.modules[file];
    const std::string path = dir_ + "/" + files_[file];
    const std::string ptx = read_file(path);  // NUL-terminated by c_str(), as the JIT wants
    char log[8192] = {0};
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {log, reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof(log)))};
    CUmodule loaded = nullptr;
    const CUresult r = driver().cuModuleLoadDataEx(&loaded, ptx.c_str(), 2, options, values);
    TORCH_CHECK(r == CUDA_SUCCESS, "mps_ops cuda: loading ", path, " (cuModuleLoadDataEx): ",
                describe(r), log[0] ? std::string("\nPTX JIT log:\n") + log : std::string());
    state.modules[file] = loaded;
    return loaded;
  }

  KernelHandle::Loaded& loaded(KernelHandle* kernel, int ordinal) const {
    auto found = kernel->per_device.find(ordinal);
    if (found != kernel->per_device.end()) {
      device_state(ordinal);  // the context current on this thread
      return found->second;
    }
    const Driver& d = driver();
    Device& state = device_state(ordinal);
    const std::string& name = kernel->entry.host_name;
    KernelHandle::Loaded l;
    check(d.cuModuleGetFunction(&l.function, module(state, kernel->file), name.c_str()),
          "kernel " + name + ": cuModuleGetFunction in " + files_[kernel->file]);
    int value = 0;
    check(d.cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, l.function),
          "kernel " + name + ": cuFuncGetAttribute");
    l.max_threads = std::min<uint32_t>(static_cast<uint32_t>(value), max_group_threads);
    check(d.cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, l.function),
          "kernel " + name + ": cuFuncGetAttribute");
    l.static_shared = static_cast<uint32_t>(value);
    return kernel->per_device.emplace(ordinal, l).first->second;
  }

  mutable std::mutex mutex_;
  mutable std::string dir_;
  mutable std::vector<std::string> files_;
  mutable std::map<std::string, std::unique_ptr<KernelHandle>> kernels_;
  mutable std::map<std::string, std::unique_ptr<Library>> libraries_;
  mutable std::map<int, Device> devices_;
  std::atomic<bool> stream_writes_host_memory_{!switched_on("MPS_OPS_CUDA_WAIT_BY_SYNC")};
};

// Inline bytes (setBytes) travel in device memory (launch_abi.h: the entry
// reads every [[buffer(N)]] through a device address): all of a dispatch's
// inline slots in one block, copied from pinned host memory on the launch
// stream by the driver (no aten copy: on Metal, setBytes is no tensor
// operation either), so the copy is asynchronous and ordered before the
// kernel. The device block comes from torch's caching allocator, which keeps
// it from reuse until the stream's work on it is done; the host block is
// kept by an event on the stream. Returns the device block (kept alive by
// the caller until the launch is enqueued) and fills addresses.
at::Tensor stage_inline_bytes(const ArgSlot* args, int count, const c10::Device& device,
                              void* stream, void* addresses[]) {
  uint64_t total = 0;
  uint64_t offsets[max_kernel_args] = {};
  for (int i = 0; i < count; ++i) {
    if (!args[i].bound || args[i].inline_data == nullptr) continue;
    offsets[i] = total;
    total = round_up(total + args[i].bytes, threadgroup_granule);
  }
  if (total == 0) return at::Tensor();
  const c10::DataPtr host = cuda::pinned_host_block(total);
  auto* bytes = static_cast<unsigned char*>(host.get());
  for (int i = 0; i < count; ++i) {
    if (args[i].bound && args[i].inline_data != nullptr) {
      std::memcpy(bytes + offsets[i], args[i].inline_data, args[i].bytes);
    }
  }
  at::Tensor on_device = at::empty({static_cast<int64_t>(total)},
                                   at::TensorOptions().dtype(at::kByte).device(device));
  auto* base = static_cast<unsigned char*>(on_device.mutable_data_ptr());
  check(driver().cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(base), bytes, total,
                                   static_cast<CUstream>(stream)),
        "copying a dispatch's inline bytes to the GPU");
  cuda::keep_until_stream_done(host, device);
  for (int i = 0; i < count; ++i) {
    if (args[i].bound && args[i].inline_data != nullptr) addresses[i] = base + offsets[i];
  }
  return on_device;
}

void CudaBackend::dispatch(const KernelHandle* kernel, const ArgSlot* args, int count,
                           const uint32_t* threadgroup_lengths, Dim3 threads, Dim3 group) {
  TORCH_CHECK(kernel != nullptr, "mps_ops cuda: dispatch without a kernel");
  const std::string& name = kernel->entry.host_name;
  TORCH_CHECK(count >= 0 && count <= max_kernel_args, "mps_ops: ", name, ": ", count,
              " arguments, Metal's buffer table has ", max_kernel_args);
  TORCH_CHECK(group.x >= 1 && group.y >= 1 && group.z >= 1 &&
                  uint64_t(group.x) * group.y * group.z <= max_group_threads,
              "mps_ops: ", name, ": threadgroup size (", group.x, ", ", group.y, ", ", group.z,
              ") must be between 1 and ", max_group_threads, " threads");
  if (threads.x == 0 || threads.y == 0 || threads.z == 0) return;
  check_declared_slots(name.c_str(), kernel->entry.buffer_slots, kernel->entry.threadgroup_slots,
                       args, count, threadgroup_lengths);

  const c10::Device device = cuda::current_device();
  KernelHandle::Loaded function;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    function = loaded(const_cast<KernelHandle*>(kernel), device.index());
  }
  const uint32_t block = group.x * group.y * group.z;
  TORCH_CHECK(block <= function.max_threads, "mps_ops: ", name, ": threadgroup size (", group.x,
              ", ", group.y, ", ", group.z, ") exceeds the ", function.max_threads,
              " threads this kernel can run per block on this GPU");

  mps_ops_cuda::dispatch_params params;
  std::memset(&params, 0, sizeof(params));
  uint64_t dynamic_shared = 0;
  for (int i = 0; i < max_kernel_args && threadgroup_lengths != nullptr; ++i) {
    params.threadgroup_offsets[i] = static_cast<uint32_t>(dynamic_shared);
    dynamic_shared += round_up(threadgroup_lengths[i], threadgroup_granule);
  }
  TORCH_CHECK(dynamic_shared + function.static_shared <= max_threadgroup_bytes, "mps_ops: ", name,
              ": threadgroup memory (", function.static_shared, " bytes declared plus ",
              dynamic_shared, " bytes of threadgroup arguments) exceeds Metal's 32 KiB");

  const uint64_t groups_x = (uint64_t(threads.x) + group.x - 1) / group.x;
  const uint64_t groups_y = (uint64_t(threads.y) + group.y - 1) / group.y;
  const uint64_t groups_z = (uint64_t(threads.z) + group.z - 1) / group.z;
  // Each factor is below 2^32, so each product is checked before it can wrap.
  const bool fits = groups_x * groups_y <= max_grid_x && groups_x * groups_y * groups_z <= max_grid_x;
  TORCH_CHECK(fits, "mps_ops cuda: ", name, ": ", groups_x, " x ", groups_y, " x ", groups_z,
              " threadgroups do not fit CUDA's grid (every threadgroup is folded into gridDim.x, "
              "at most ", max_grid_x, ")");
  const uint64_t grid = groups_x * groups_y * groups_z;
  params.threads = {threads.x, threads.y, threads.z};
  params.group = {group.x, group.y, group.z};
  params.groups = {static_cast<uint32_t>(groups_x), static_cast<uint32_t>(groups_y),
                   static_cast<uint32_t>(groups_z)};
  params.reverse_group_order = reverse_groups() ? 1u : 0u;

  for (int i = 0; i < count; ++i) {
    if (args[i].bound && args[i].inline_data == nullptr) {
      params.buffers[i] = static_cast<char*>(const_cast<void*>(args[i].storage)) + args[i].offset;
    }
  }
  auto* stream = static_cast<CUstream>(cuda::current_stream(device));
  {
    // The context must be current on this thread for the copy and the launch.
    std::lock_guard<std::mutex> lock(mutex_);
    device_state(device.index());
  }
  const at::Tensor inline_block = stage_inline_bytes(args, count, device, stream, params.buffers);
  void* kernel_params[] = {&params};
  const CUresult launched = driver().cuLaunchKernel(
      function.function, static_cast<unsigned>(grid), 1, 1, block, 1, 1,
      static_cast<unsigned>(dynamic_shared), stream, kernel_params, nullptr);
  TORCH_CHECK(launched == CUDA_SUCCESS, "mps_ops cuda: kernel ", name, " (", files_[kernel->file],
              "): cuLaunchKernel of ", grid, " blocks of ", block, " threads, ", dynamic_shared,
              " bytes of dynamic shared memory: ", describe(launched));
  if (launch_log() != nullptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto* handle = const_cast<KernelHandle*>(kernel);
    if (!handle->logged) {
      handle->logged = true;
      if (FILE* log = std::fopen(launch_log(), "a")) {
        std::fprintf(log, "%s\n", name.c_str());
        std::fclose(log);
      }
    }
  }
  if (sync_after_launch()) {
    const CUresult done = driver().cuStreamSynchronize(stream);
    TORCH_CHECK(done == CUDA_SUCCESS, "mps_ops cuda: kernel ", name, " (", files_[kernel->file],
                ") failed while running: ", describe(done));
  }
}

CudaBackend& instance() {
  static CudaBackend backend;
  return backend;
}

}  // namespace

Backend& cuda_backend() { return instance(); }

std::vector<std::string> cuda_kernel_names() { return instance().names(); }

}  // namespace mps_ops
