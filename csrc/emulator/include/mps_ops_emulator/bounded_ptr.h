// Bounds-checked pointers into device, constant and threadgroup memory.
//
// The prepass rewrites every `device T*`, `constant T*` and `threadgroup T*`
// of a kernel source into bounded_ptr<T> (const T for constant), and every
// declared `threadgroup T x[N]` into a bounded_array. Each carries the range
// it was derived from (a bound buffer, a [[threadgroup(N)]] argument, a
// declared threadgroup array), and every access through it checks that the
// accessed bytes lie inside that range, at any offset: an index of 2**40
// raises like an index of one past the end, and an overflow from one
// threadgroup argument into the next is caught. Guard pages (checked mode)
// catch only what lands on them.
//
// A failed check calls the dispatch's `fail` hook (the core formats the
// message and jumps back to the dispatch), so the access itself never
// happens. Pointer arithmetic is not checked (a pointer may point past its
// range, as in C++); dereferencing it is.
//
// A raw pointer converted to a bounded_ptr (`&p[i]` stored into a pointer
// variable, a program-scope `constant` table) finds its range among the
// dispatch's registered ranges; outside all of them it is unbounded.
#pragma once

#include "kernel_abi.h"

namespace mps_ops_emu {

template <bool B, class T = void>
struct only_if {};
template <class T>
struct only_if<true, T> {
  using type = T;
};

// Whether a U* converts to a T* implicitly (adding const, to void*).
template <class U, class T>
struct pointer_converts {
  static char test(T*);
  static long test(...);
  static constexpr bool value = sizeof(test(static_cast<U*>(nullptr))) == 1;
};

// Known ranges of the running dispatch: its buffers, threadgroup arguments
// and declared threadgroup storage. One table per OS thread: threadgroups
// (and their fibers) of a dispatch run on the thread that dispatched it.
constexpr int max_ranges = 2 * max_buffers + 64;

struct range_table {
  const dispatch_args* args;
  int count;
  memory_range ranges[max_ranges];
  const memory_range* buffer_range[max_buffers];       // nullptr where none is bound
  const memory_range* threadgroup_range[max_buffers];  // nullptr where none is set
};

inline range_table& active_ranges() {
  static thread_local range_table table{};
  return table;
}

inline const memory_range* add_range(uintptr_t begin, uint64_t bytes, memory_kind kind, int index,
                                     const char* name) {
  range_table& t = active_ranges();
  if (t.count == max_ranges) return nullptr;  // left unbounded: the table is a convenience
  t.ranges[t.count] = memory_range{begin, bytes, kind, index, name};
  return &t.ranges[t.count++];
}

inline const memory_range* range_containing(uintptr_t address) {
  range_table& t = active_ranges();
  for (int i = t.count - 1; i >= 0; --i) {
    const memory_range& r = t.ranges[i];
    if (address - r.begin < r.bytes) return &r;
  }
  return nullptr;
}

[[noreturn]] inline void out_of_bounds(const memory_range& range, uintptr_t address, uint64_t bytes) {
  const dispatch_args* args = active_ranges().args;
  access_fault fault{&range, int64_t(address - range.begin), bytes};
  args->fail(args->fail_context, fault);
  __builtin_unreachable();
}

template <class T>
struct access_size {
  static constexpr uint64_t value = sizeof(T);
};
template <>
struct access_size<void> {
  static constexpr uint64_t value = 1;
};
template <>
struct access_size<const void> {
  static constexpr uint64_t value = 1;
};
template <>
struct access_size<volatile void> {
  static constexpr uint64_t value = 1;
};
template <>
struct access_size<const volatile void> {
  static constexpr uint64_t value = 1;
};

template <class T>
class bounded_ptr;

// What every bounded_ptr holds. bounded_ptr<T> derives from
// bounded_ptr<const T>, which derives from this: a template taking
// `constant T*` or `device const T*` (bounded_ptr<const T>) then deduces T
// from a bounded_ptr<float> argument as C++ deduces it from a float*.
class bounded_storage {
 protected:
  bounded_storage() = default;
  bounded_storage(uintptr_t address, const memory_range* range) : address_(address) { adopt(range); }
  void adopt(const memory_range* range) {
    range_ = range;
    if (range != nullptr) {
      begin_ = range->begin;
      bytes_ = range->bytes;
    }
  }
  // One unsigned comparison pair per access: an address below the range
  // wraps to a huge offset.
  void check(uintptr_t at, uint64_t size) const {
    const uint64_t offset = at - begin_;
    if (__builtin_expect(offset > bytes_ || bytes_ - offset < size, 0)) out_of_bounds(*range_, at, size);
  }

  uintptr_t address_ = 0;
  const memory_range* range_ = nullptr;
  // Unbounded until adopted: every address passes.
  uintptr_t begin_ = 0;
  uint64_t bytes_ = ~uint64_t(0);

  template <class U>
  friend class bounded_ptr;
};

template <class T>
struct bounded_parent {
  using type = bounded_ptr<const T>;
};
template <class T>
struct bounded_parent<const T> {
  using type = bounded_storage;
};

template <class T>
class bounded_ptr : public bounded_parent<T>::type {
  using parent = typename bounded_parent<T>::type;

 public:
  using element_type = T;

  bounded_ptr() = default;
  bounded_ptr(decltype(nullptr)) {}
  // A raw pointer (from `&p[i]`, a cast, a program-scope table): bounded by
  // the registered range it lies in, if any.
  bounded_ptr(T* raw) { reset(uintptr_t(raw), range_containing(uintptr_t(raw))); }
  template <unsigned long N>
  bounded_ptr(T (&array)[N]) {
    reset(uintptr_t(array), range_containing(uintptr_t(array)));
  }
  bounded_ptr(T* p, const memory_range* range) { reset(uintptr_t(p), range); }
  // T* from U* implicitly where C++ allows it (adding const, to void*).
  template <class U, typename only_if<pointer_converts<U, T>::value, int>::type = 0>
  bounded_ptr(const bounded_ptr<U>& other) {
    copy_from(other, uintptr_t(static_cast<T*>(other.get())));
  }
  // Any other pointer conversion (a C-style cast): same range, new type.
  template <class U, typename only_if<!pointer_converts<U, T>::value, int>::type = 0>
  explicit bounded_ptr(const bounded_ptr<U>& other) {
    copy_from(other, uintptr_t(other.get()));
  }

  T* get() const { return reinterpret_cast<T*>(this->address_); }
  const memory_range* range() const { return this->range_; }

  template <class U = T>
  U& operator*() const {
    return *checked(get());
  }
  template <class U = T>
  U* operator->() const {
    return checked(get());
  }
  template <class I, class U = T>
  U& operator[](I i) const {
    return *checked(get() + i);
  }

  template <class I>
  bounded_ptr operator+(I i) const {
    bounded_ptr moved = *this;
    moved += i;
    return moved;
  }
  template <class I>
  friend bounded_ptr operator+(I i, const bounded_ptr& p) {
    return p + i;
  }
  template <class I>
  bounded_ptr operator-(I i) const {
    bounded_ptr moved = *this;
    moved -= i;
    return moved;
  }
  template <class U>
  long operator-(const bounded_ptr<U>& other) const {
    return get() - other.get();
  }
  template <class I>
  bounded_ptr& operator+=(I i) {
    this->address_ = uintptr_t(get() + i);
    return *this;
  }
  template <class I>
  bounded_ptr& operator-=(I i) {
    this->address_ = uintptr_t(get() - i);
    return *this;
  }
  bounded_ptr& operator++() { return *this += 1; }
  bounded_ptr& operator--() { return *this -= 1; }
  bounded_ptr operator++(int) {
    bounded_ptr old = *this;
    *this += 1;
    return old;
  }
  bounded_ptr operator--(int) {
    bounded_ptr old = *this;
    *this -= 1;
    return old;
  }
  explicit operator bool() const { return get() != nullptr; }

  template <class U>
  bool operator==(const bounded_ptr<U>& o) const { return this->address_ == o.address_; }
  template <class U>
  bool operator!=(const bounded_ptr<U>& o) const { return this->address_ != o.address_; }
  template <class U>
  bool operator<(const bounded_ptr<U>& o) const { return this->address_ < o.address_; }
  template <class U>
  bool operator<=(const bounded_ptr<U>& o) const { return this->address_ <= o.address_; }
  template <class U>
  bool operator>(const bounded_ptr<U>& o) const { return this->address_ > o.address_; }
  template <class U>
  bool operator>=(const bounded_ptr<U>& o) const { return this->address_ >= o.address_; }
  bool operator==(decltype(nullptr)) const { return get() == nullptr; }
  bool operator!=(decltype(nullptr)) const { return get() != nullptr; }

 private:
  void reset(uintptr_t address, const memory_range* range) {
    this->address_ = address;
    this->adopt(range);
  }
  template <class U>
  void copy_from(const bounded_ptr<U>& other, uintptr_t address) {
    this->address_ = address;
    this->range_ = other.range_;
    this->begin_ = other.begin_;
    this->bytes_ = other.bytes_;
  }
  T* checked(T* at) const {
    this->check(uintptr_t(at), access_size<T>::value);
    return at;
  }
};

// Bytes one element of a pointer parameter spans (void: 1), raw or bounded:
// the prepass's per-slot signature table (kernel_abi.h buffer_param).
template <class P>
struct pointee_size;
template <class T>
struct pointee_size<T*> : access_size<T> {};
template <class T>
struct pointee_size<bounded_ptr<T>> : access_size<T> {};

// reinterpret_cast / static_cast / const_cast to a bounded pointer type (the
// prepass rewrites those casts when their target is one).
template <class To, class From>
To pointer_cast(const bounded_ptr<From>& from) {
  return To(from);
}
template <class To, class From>
To pointer_cast(From* from) {
  return To(bounded_ptr<From>(from));
}

// A declared `threadgroup T x[N]...`: indexing checks against the whole
// declaration; it decays to a bounded_ptr where a pointer is expected.
template <class A>
class bounded_array;
template <class E, unsigned long N>
class bounded_array<E[N]> : public bounded_ptr<E> {
 public:
  bounded_array(E* first, const memory_range* range) : bounded_ptr<E>(first, range) {}
};
template <class E, unsigned long M, unsigned long N>
class bounded_array<E[M][N]> {
 public:
  bounded_array(E (*first)[N], const memory_range* range) : first_(first), range_(range) {}
  template <class I>
  bounded_array<E[N]> operator[](I i) const {
    bounded_ptr<E[N]> row = bounded_ptr<E[N]>(first_, range_) + i;
    return bounded_array<E[N]>(*row.operator->(), range_);
  }

 private:
  E (*first_)[N];
  const memory_range* range_;
};

}  // namespace mps_ops_emu
