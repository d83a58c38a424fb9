// Drives csrc/metal/builtin_libraries.cpp on Linux against a stand-in
// MetalLibrary (no Metal): which library each built-in kernel comes from,
// when each library is made, that a failure stays with its file, the slots
// handed to each kernel, the environment switch, and check_declared_slots.
//
// The stand-in's "metallib" and "sources" are comma-separated function names;
// a source starting with "REJECT" fails to compile, a metallib "BAD" to load.
#include "runtime/declared_slots.h"
#include "metal/builtin_libraries.h"
#include "metal/embedded_kernels.h"

#include <c10/util/Exception.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace mps_ops {

struct KernelHandle {
  std::string name;
  KernelSlots slots;
};

struct MetalLibrary::Impl {
  std::string label;
  std::set<std::string> functions;
  std::map<std::string, std::unique_ptr<KernelHandle>> kernels;
};

namespace {
std::mutex made_mutex;
std::vector<std::string> made;  // labels of the libraries made, in order

void record(const std::string& label) {
  std::lock_guard<std::mutex> lock(made_mutex);
  made.push_back(label);
}

std::set<std::string> split(const std::string& text) {
  std::set<std::string> names;
  std::stringstream in(text);
  for (std::string name; std::getline(in, name, ',');) names.insert(name);
  return names;
}
}  // namespace

MetalLibrary::MetalLibrary(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MetalLibrary::~MetalLibrary() = default;
const std::string& MetalLibrary::label() const { return impl_->label; }

std::shared_ptr<MetalLibrary> MetalLibrary::from_metallib(const void* bytes, size_t size,
                                                          const std::string& label) {
  record(label);
  const std::string image(static_cast<const char*>(bytes), size);
  TORCH_CHECK(image != "BAD", "stand-in: Metal cannot load metallib '", label, "'");
  auto impl = std::make_unique<Impl>();
  impl->label = label;
  impl->functions = split(image);
  return std::shared_ptr<MetalLibrary>(new MetalLibrary(std::move(impl)));
}

std::shared_ptr<MetalLibrary> MetalLibrary::from_source(const std::string& source,
                                                        const std::string& label) {
  record(label);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a compile takes time
  TORCH_CHECK(source.rfind("REJECT", 0) != 0, "stand-in: Metal failed to compile '", label, "'");
  auto impl = std::make_unique<Impl>();
  impl->label = label;
  impl->functions = split(source);
  return std::shared_ptr<MetalLibrary>(new MetalLibrary(std::move(impl)));
}

KernelHandle* MetalLibrary::find_kernel(const std::string& name) { return lookup(name, nullptr); }
KernelHandle* MetalLibrary::find_kernel(const std::string& name, KernelSlots declared) {
  return lookup(name, &declared);
}
KernelHandle* MetalLibrary::lookup(const std::string& name, const KernelSlots* declared) {
  if (!impl_->functions.count(name)) return nullptr;
  auto& slot = impl_->kernels[name];
  if (!slot) slot.reset(new KernelHandle{name, declared ? *declared : KernelSlots{}});
  return slot.get();
}
std::vector<std::string> MetalLibrary::function_names() const {
  return {impl_->functions.begin(), impl_->functions.end()};
}

}  // namespace mps_ops

using namespace mps_ops;

namespace {
int passed = 0, failed = 0;

void expect(bool ok, const char* what) {
  if (ok) {
    ++passed;
  } else {
    ++failed;
    std::printf("FAILED: %s\n", what);
  }
}

// The message find_kernel raised, or "" when it did not raise.
std::string error_of(BuiltinLibraries& libraries, const char* name) {
  try {
    libraries.find_kernel(name);
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  }
  return "";
}

bool contains(const std::string& text, const char* part) {
  return text.find(part) != std::string::npos;
}

size_t times_made(const char* label) {
  std::lock_guard<std::mutex> lock(made_mutex);
  size_t n = 0;
  for (const auto& m : made) n += m == label;
  return n;
}

// Three files: a.metal (two kernels), b.metal (rejected by the compiler; its
// kernel "b0" is in the table), c.metal. "lost" is in the table but in no
// library (a stale build).
const char* const sources[] = {"a0,a1", "REJECT b0", "c0"};
const char* const source_names[] = {"csrc/kernels/a.metal", "csrc/kernels/b.metal",
                                    "csrc/kernels/c.metal"};
const mps_ops_embedded_kernel kernels[] = {
    {"a0", 0, 0x3, 0x0}, {"a1", 0, 0x7, 0x4}, {"b0", 1, 0x1, 0x0},
    {"c0", 2, 0xff, 0x0}, {"lost", 2, 0x1, 0x0},
};

EmbeddedKernels embedded(const char* metallib) {
  EmbeddedKernels e;
  e.metallib = reinterpret_cast<const unsigned char*>(metallib);
  e.metallib_size = std::strlen(metallib);
  e.sources = sources;
  e.source_names = source_names;
  e.source_count = 3;
  e.kernels = kernels;
  e.kernel_count = 5;
  return e;
}

void source_fallback_compiles_one_file_per_first_use() {
  made.clear();
  BuiltinLibraries libraries(embedded(""), false);
  expect(libraries.compiles_sources(), "no metallib: sources");
  expect(made.empty(), "nothing is compiled before a lookup");
  KernelHandle* a0 = libraries.find_kernel("a0");
  expect(a0 != nullptr && a0->name == "a0", "a0 found");
  expect(a0 && a0->slots.buffers == 0x3 && a0->slots.threadgroups == 0, "a0 has the table's slots");
  KernelHandle* a1 = libraries.find_kernel("a1");
  expect(a1 && a1->slots.buffers == 0x7 && a1->slots.threadgroups == 0x4, "a1 has the table's slots");
  expect(made == std::vector<std::string>{"csrc/kernels/a.metal"}, "only a.metal compiled, once");
  expect(libraries.find_kernel("nope") == nullptr, "a name in no file is no kernel");
  expect(made.size() == 1, "a miss compiles nothing");

  const std::string first = error_of(libraries, "b0");
  expect(contains(first, "b0") && contains(first, "stand-in: Metal failed to compile") &&
             contains(first, "csrc/kernels/b.metal"),
         "a rejected file's error names the kernel, the file and the compiler's message");
  expect(error_of(libraries, "b0") == first, "the same error again");
  expect(times_made("csrc/kernels/b.metal") == 1, "a rejected file is compiled once");
  KernelHandle* c0 = libraries.find_kernel("c0");
  expect(c0 && c0->slots.buffers == 0xff, "another file's kernel works after a rejected file");
  expect(libraries.find_kernel("a0") == a0, "and the first file's kernels still do");

  const std::string stale = error_of(libraries, "lost");
  expect(contains(stale, "lost") && contains(stale, "rebuild"), "a table entry missing from its library");
}

void metallib_serves_every_kernel() {
  made.clear();
  BuiltinLibraries libraries(embedded("a0,a1,b0,c0"), false);
  expect(!libraries.compiles_sources(), "a metallib is used");
  KernelHandle* b0 = libraries.find_kernel("b0");
  expect(b0 && b0->slots.buffers == 0x1, "b0 from the metallib (its source is never compiled)");
  expect(libraries.find_kernel("c0") != nullptr, "c0 from the metallib");
  expect(made == std::vector<std::string>{"mps_ops.metallib"}, "the metallib is loaded once");
}

void forced_source_ignores_the_metallib() {
  made.clear();
  BuiltinLibraries libraries(embedded("a0,a1,b0,c0"), true);
  expect(libraries.compiles_sources(), "forced: sources");
  expect(libraries.find_kernel("c0") != nullptr, "c0 compiled from c.metal");
  expect(!error_of(libraries, "b0").empty(), "b0's file is rejected, metallib or not");
  expect(times_made("mps_ops.metallib") == 0, "the metallib is never loaded");
}

void a_bad_metallib_points_at_the_switch() {
  made.clear();
  BuiltinLibraries libraries(embedded("BAD"), false);
  const std::string error = error_of(libraries, "a0");
  expect(contains(error, "stand-in: Metal cannot load metallib") &&
             contains(error, "MPS_OPS_METAL_FROM_SOURCE=1"),
         "a metallib that does not load names the switch");
  expect(contains(error_of(libraries, "c0"), "cannot load metallib"), "every kernel raises it");
  expect(times_made("mps_ops.metallib") == 1, "a bad metallib is loaded once");
}

void one_file_compiles_once_under_concurrent_lookups() {
  made.clear();
  BuiltinLibraries libraries(embedded(""), false);
  std::atomic<int> found{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      if (libraries.find_kernel(i % 2 ? "a0" : "a1") != nullptr) ++found;
    });
  }
  for (auto& t : threads) t.join();
  expect(found == 8, "every thread found its kernel");
  expect(times_made("csrc/kernels/a.metal") == 1, "a.metal compiled once for 8 threads");
}

void the_switch_reads_1_only() {
  unsetenv(force_source_variable);
  expect(!force_source_requested(), "unset: metallib");
  setenv(force_source_variable, "1", 1);
  expect(force_source_requested(), "1: sources");
  setenv(force_source_variable, "0", 1);
  expect(!force_source_requested(), "0: metallib");
  unsetenv(force_source_variable);
}

std::string slot_error(uint32_t buffers, uint32_t groups, const ArgSlot* args, int count,
                       const uint32_t* lengths) {
  try {
    check_declared_slots("k", buffers, groups, args, count, lengths);
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  }
  return "";
}

void declared_slots_must_be_set() {
  ArgSlot args[3];
  args[0].bound = true;
  args[2].bound = true;
  expect(slot_error(0x5, 0, args, 3, nullptr).empty(), "every declared buffer bound");
  expect(contains(slot_error(0x7, 0, args, 3, nullptr),
                  "k: buffer(1) is declared by the kernel but nothing is bound to it"),
         "a skipped buffer slot raises");
  expect(contains(slot_error(0x9, 0, args, 3, nullptr), "buffer(3)"),
         "a declared slot past the bound count raises");
  uint32_t lengths[max_kernel_args] = {};
  lengths[1] = 64;
  expect(slot_error(0x1, 0x2, args, 1, lengths).empty(), "declared threadgroup memory set");
  expect(contains(slot_error(0x1, 0x4, args, 1, lengths), "threadgroup(2) is declared"),
         "unset threadgroup memory raises");
  expect(contains(slot_error(0x1, 0x1, args, 1, nullptr), "threadgroup(0)"),
         "no lengths at all raises");
}
}  // namespace

int main() {
  source_fallback_compiles_one_file_per_first_use();
  metallib_serves_every_kernel();
  forced_source_ignores_the_metallib();
  a_bad_metallib_points_at_the_switch();
  one_file_compiles_once_under_concurrent_lookups();
  the_switch_reads_1_only();
  declared_slots_must_be_set();
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
