#include "checked_memory.h"

#include "fiber_pool.h"

#include <csetjmp>
#include <cstdio>
#include <csignal>
#include <mutex>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

namespace mps_ops::emulator {

namespace {

constexpr unsigned char gap_poison = 0xa5;

size_t page_size() {
  static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

std::string name_of(int index) {
  return index >= 0 ? "buffer(" + std::to_string(index) + ")"
                    : "threadgroup memory (storage " + std::to_string(-1 - index) + ")";
}

}  // namespace

CheckedBuffers::~CheckedBuffers() {
  for (auto& s : shadows_) munmap(s.region, s.region_bytes);
}

void* CheckedBuffers::add(int index, void* data, size_t bytes) {
  const size_t page = page_size();
  const size_t body = round_up(bytes == 0 ? 1 : bytes, page);
  const size_t region_bytes = page + body + page;
  void* mem = mmap(nullptr, region_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return data;  // no room to check this one: run it unchecked
  auto* region = static_cast<unsigned char*>(mem);
  mprotect(region, page, PROT_NONE);
  mprotect(region + page + body, page, PROT_NONE);
  unsigned char* start = region + page + body - bytes;
  std::memset(region + page, gap_poison, body - bytes);
  if (bytes) std::memcpy(start, data, bytes);
  std::vector<unsigned char> before(static_cast<unsigned char*>(data), static_cast<unsigned char*>(data) + bytes);
  shadows_.push_back(Shadow{index, data, bytes, region, region_bytes, start, std::move(before)});
  return start;
}

unsigned char* CheckedBuffers::add_threadgroup(size_t bytes) {
  std::vector<unsigned char> scratch(bytes, 0xff);
  const size_t before = shadows_.size();
  void* placed = add(-1 - threadgroup_count_++, scratch.data(), bytes);
  if (shadows_.size() == before) return nullptr;  // not mapped: the caller keeps its own storage
  shadows_.back().original = nullptr;              // nothing to copy back
  return static_cast<unsigned char*>(placed);
}

void CheckedBuffers::copy_back() {
  // Only the bytes the kernel changed go back: two slots bound to one storage
  // (an in-place op, or two views of one tensor) have two copies, and one
  // copy's untouched bytes must not overwrite what the kernel wrote through
  // the other.
  for (auto& s : shadows_) {
    if (s.original == nullptr) continue;  // threadgroup scratch
    auto* original = static_cast<unsigned char*>(s.original);
    for (size_t i = 0; i < s.bytes; ++i) {
      if (s.data[i] != s.before[i]) original[i] = s.data[i];
    }
  }
}

std::string CheckedBuffers::underflow_report() const {
  const size_t page = page_size();
  for (const auto& s : shadows_) {
    for (const unsigned char* p = s.region + page; p < s.data; ++p) {
      if (*p != gap_poison) {
        return "wrote " + name_of(s.index) + " at byte offset " +
               std::to_string(p - s.data) + " (before its start)";
      }
    }
  }
  return "";
}

std::string CheckedBuffers::describe(const void* addr) const {
  const auto* p = static_cast<const unsigned char*>(addr);
  for (const auto& s : shadows_) {
    if (p >= s.region && p < s.region + s.region_bytes) {
      return name_of(s.index) + " accessed at byte offset " +
             std::to_string(p - s.data) + ", outside its " + std::to_string(s.bytes) + " bound bytes";
    }
  }
  return "";
}

namespace {

struct FaultContext {
  sigjmp_buf jump;
  const CheckedBuffers* buffers;
  const FiberPool* fibers;
  std::string message;
};

thread_local FaultContext* active = nullptr;

// The handler is process-wide; threads dispatching in checked mode share one
// installation, counted, so one thread's restore never unprotects another.
std::mutex handler_mutex;
int handler_users = 0;
struct sigaction previous_segv, previous_bus;

void forward(int sig, siginfo_t* info, void* context) {
  const struct sigaction& previous = sig == SIGBUS ? previous_bus : previous_segv;
  if (previous.sa_flags & SA_SIGINFO) {
    previous.sa_sigaction(sig, info, context);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
  } else {
    // Default action: put it back; returning re-executes the fault.
    signal(sig, SIG_DFL);
  }
}

void on_fault(int sig, siginfo_t* info, void* context) {
  FaultContext* ctx = active;
  if (ctx != nullptr && ctx->buffers != nullptr) {
    std::string what = ctx->buffers->describe(info->si_addr);
    if (what.empty() && ctx->fibers && ctx->fibers->is_guard(info->si_addr)) {
      what = "a thread overflowed its stack (deep recursion or large local arrays)";
    }
    if (what.empty()) {
      // Nothing of ours is there: a wild offset far from every buffer, or a
      // private array larger than the stack. Either is the kernel's fault
      // while it runs, so it is reported, not left to kill the process.
      char address[32];
      std::snprintf(address, sizeof(address), "%p", info->si_addr);
      what = std::string("invalid access at ") + address +
             ", outside every bound buffer (an offset far past a buffer, or a private array larger "
             "than the thread's stack)";
    }
    ctx->message = what;
    siglongjmp(ctx->jump, 1);
  }
  forward(sig, info, context);
}

void install_handler() {
  std::lock_guard<std::mutex> lock(handler_mutex);
  if (handler_users++ > 0) return;
  struct sigaction action {};
  action.sa_sigaction = &on_fault;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  sigaction(SIGSEGV, &action, &previous_segv);
  sigaction(SIGBUS, &action, &previous_bus);
}

void uninstall_handler() {
  std::lock_guard<std::mutex> lock(handler_mutex);
  if (--handler_users > 0) return;
  sigaction(SIGSEGV, &previous_segv, nullptr);
  sigaction(SIGBUS, &previous_bus, nullptr);
}

void ensure_alternate_stack() {
  static thread_local bool done = false;
  if (done) return;
  static thread_local unsigned char stack[64 * 1024];
  stack_t ss{};
  ss.ss_sp = stack;
  ss.ss_size = sizeof(stack);
  sigaltstack(&ss, nullptr);
  done = true;
}

}  // namespace

std::string run_guarded(void (*launch)(const void*), const void* argument, const CheckedBuffers* buffers,
                        const FiberPool* fibers) {
  FaultContext ctx;
  ctx.buffers = buffers;
  ctx.fibers = fibers;
  if (buffers != nullptr) {
    ensure_alternate_stack();
    install_handler();
  }
  FaultContext* outer = active;
  active = &ctx;
  if (sigsetjmp(ctx.jump, 1) == 0) {
    launch(argument);
  }
  active = outer;
  if (buffers != nullptr) uninstall_handler();
  return ctx.message;
}

void abort_dispatch(const char* message) {
  FaultContext* ctx = active;
  ctx->message = message;
  siglongjmp(ctx->jump, 1);
}

}  // namespace mps_ops::emulator
