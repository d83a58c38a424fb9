// The CPU's own error for a call our checks refuse. Ops check in different
// orders (sign refuses a complex input before a wrong out=, frac after) and
// raise different types for the same mistake (isposinf's complex error is a
// RuntimeError, signbit's a NotImplementedError). So where ours refuse, the
// CPU's op runs on twins of the arguments: every tensor an empty CPU tensor
// of its dtype (a 0-dim one a 0-dim one, wrapped numbers still wrapped, so
// type promotion sees what it saw), every other argument as given. Its error
// is the user's; only where it accepts the twins is ours rethrown. (The meta
// kernels are no witness: torch replaces many with Python ones that check in
// another order.) A call that passes our checks never pays for this: the
// arguments are gathered only on refusal.
#pragma once

#include <ATen/core/ivalue.h>

#include <vector>

namespace mps_ops {

// Runs aten::<op> (aten::<op>_ where `inplace`), overload `overload` ("" for
// the default, "out"), on the CPU with `args` twinned as above; returns if it accepts them. Where our
// stubs serve the CPU themselves (the emulator's native route registers them
// for its dispatch key), the twins' call comes back to us: ours is then the
// answer, asked once.
void raise_as_the_cpu(const char* op, bool inplace, const char* overload, std::vector<c10::IValue> args);

// checks() (ours), and where they refuse, the CPU's error where it has one.
// args() gives the call's arguments in schema order.
template <typename Checks, typename Args>
void check_as_the_cpu(Checks checks, const char* op, bool inplace, const char* overload, Args args) {
  try {
    checks();
  } catch (const c10::Error&) {
    raise_as_the_cpu(op, inplace, overload, args());
    throw;
  }
}

}  // namespace mps_ops
