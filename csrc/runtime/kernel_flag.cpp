#include "kernel_flag.h"

#include "backend.h"

#include <c10/util/Exception.h>

#include <cstring>
#include <exception>
#include <mutex>
#include <vector>

namespace mps_ops {

namespace {

// Each flag takes one slot of max_words words from blocks of host-visible
// memory allocated once (an allocation of pinned or shared memory costs far
// more than a call), and gives it back when read: after the wait, no kernel
// still writes it.
class FlagSlots {
 public:
  // A flag's words, then the word wait_for_gpu may have the GPU set when it
  // is done (Backend::DoneWord), padded to 32 bytes.
  static constexpr size_t done_word = KernelFlag::max_words;
  static constexpr size_t slot_bytes = 2 * KernelFlag::max_words * sizeof(int32_t);
  static_assert(done_word * sizeof(int32_t) < slot_bytes);
  static constexpr size_t slots_per_block = 256;

  struct Slot {
    const void* storage;
    size_t offset;
    int32_t* host;
  };

  Slot take() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.empty()) {
      const Backend::HostVisible block = backend().allocate_host_visible(slot_bytes * slots_per_block);
      TORCH_CHECK(block.storage != nullptr && block.host != nullptr,
                  "mps_ops: the backend gave no host-visible memory for kernel flags");
      for (size_t i = slots_per_block; i-- > 0;) {
        free_.push_back(Slot{block.storage, i * slot_bytes,
                             reinterpret_cast<int32_t*>(static_cast<char*>(block.host) + i * slot_bytes)});
      }
    }
    const Slot slot = free_.back();
    free_.pop_back();
    return slot;
  }

  void give_back(const Slot& slot) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(slot);
  }

 private:
  std::mutex mutex_;
  std::vector<Slot> free_;
};

// The word after a slot's flag words.
Backend::DoneWord done_word_of(const void* storage, size_t offset, int32_t* host) {
  return Backend::DoneWord{storage, offset + FlagSlots::done_word * sizeof(int32_t), host + FlagSlots::done_word};
}

FlagSlots& flag_slots() {
  static FlagSlots* slots = new FlagSlots();  // never destroyed: blocks live for the process
  return *slots;
}

}  // namespace

KernelFlag::KernelFlag(int words) : words_(words), exceptions_at_start_(std::uncaught_exceptions()) {
  TORCH_INTERNAL_ASSERT(words >= 1 && words <= max_words, "mps_ops: a KernelFlag of ", words, " words");
  const FlagSlots::Slot slot = flag_slots().take();
  storage_ = slot.storage;
  offset_ = slot.offset;
  host_ = slot.host;
  // Before any dispatch that binds it: the previous holder's wait ordered
  // every kernel that wrote these words before this store.
  std::memset(host_, 0, FlagSlots::slot_bytes);
}

KernelFlag::KernelFlag(KernelFlag&& other) noexcept
    : storage_(other.storage_), offset_(other.offset_), host_(other.host_), words_(other.words_),
      exceptions_at_start_(other.exceptions_at_start_), bound_(other.bound_), waited_(other.waited_),
      marked_(other.marked_), mark_stream_(other.mark_stream_) {
  other.host_ = nullptr;
}

KernelFlag::~KernelFlag() {
  // A flag bound, then left by an exception before its check, may still be
  // written by a kernel in flight: it is retired, not reused. So is one
  // marked and left before its mark was seen (the mark would set the next
  // holder's done word). One left unread otherwise is one its kernels never
  // write.
  const bool unwinding = std::uncaught_exceptions() > exceptions_at_start_;
  if (host_ != nullptr && (waited_ || (!marked_ && (!bound_ || !unwinding)))) {
    flag_slots().give_back(FlagSlots::Slot{storage_, offset_, host_});
  }
}

void KernelFlag::mark_when_done() {
  TORCH_INTERNAL_ASSERT(host_ != nullptr && !marked_);
  if (bound_ && !waited_) {
    mark_stream_ = backend().mark_when_done(done_word_of(storage_, offset_, host_));
    marked_ = true;
  }
}

bool KernelFlag::finished() const {
  if (!waited_ && (!bound_ || (marked_ && __atomic_load_n(done_word_of(storage_, offset_, host_).host,
                                                          __ATOMIC_ACQUIRE) != 0))) {
    waited_ = true;
  }
  return waited_;
}

void KernelFlag::wait_until_finished() const {
  if (!finished()) {
    if (marked_) {
      backend().wait_until_marked(done_word_of(storage_, offset_, host_), mark_stream_);
    } else {
      backend().wait_for_gpu(done_word_of(storage_, offset_, host_));
    }
    waited_ = true;
  }
}

bool KernelFlag::raised(int word) const {
  TORCH_INTERNAL_ASSERT(word >= 0 && word < words_ && host_ != nullptr);
  if (!bound_) {
    // No kernel was handed it (an op over no elements dispatched nothing):
    // nothing can have set it, and there is nothing to wait for.
    return false;
  }
  wait_until_finished();
  // volatile: written by the GPU, not by anything the compiler sees.
  return static_cast<const volatile int32_t*>(host_)[word] != 0;
}

}  // namespace mps_ops
