// The hand-written context switch under the emulator's fibers (a prototype
// measured swapcontext 13x slower). One weak, hidden definition per shared
// object: every kernel translation unit carries it and the linker keeps one.
//
// mps_ops_emu_switch(save, load): pushes the callee-saved registers and the
// floating-point control state, stores the stack pointer in *save, switches
// to `load` and pops the same layout from there. A new fiber's stack is laid
// out (fiber_stack_init) so that the first switch "returns" into
// mps_ops_emu_fiber_start, which calls entry(argument) from two callee-saved
// registers. Only x86-64 has run (Linux); the AArch64 variant is unverified.
#pragma once

#include <stdint.h>

extern "C" void mps_ops_emu_switch(void** save_sp, void* load_sp);
extern "C" void mps_ops_emu_fiber_start();

// Symbol spelling: Mach-O prefixes an underscore; ELF wants a type. "%function"
// is accepted by both the x86-64 and AArch64 ELF assemblers.
#if defined(__APPLE__)
#define MPS_OPS_EMU_SYM(name) "_" #name
#define MPS_OPS_EMU_SYM_DECL(name) \
  ".globl _" #name "\n.weak_definition _" #name "\n.private_extern _" #name "\n"
#else
#define MPS_OPS_EMU_SYM(name) #name
#define MPS_OPS_EMU_SYM_DECL(name) \
  ".weak " #name "\n.hidden " #name "\n.type " #name ",%function\n"
#endif

#if defined(__x86_64__)


__asm__(
    ".text\n"
    ".p2align 4\n"
    MPS_OPS_EMU_SYM_DECL(mps_ops_emu_switch)
    MPS_OPS_EMU_SYM(mps_ops_emu_switch) ":\n"
    "  pushq %rbp\n"
    "  pushq %rbx\n"
    "  pushq %r12\n"
    "  pushq %r13\n"
    "  pushq %r14\n"
    "  pushq %r15\n"
    "  subq $8, %rsp\n"
    "  stmxcsr (%rsp)\n"
    "  fnstcw 4(%rsp)\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  ldmxcsr (%rsp)\n"
    "  fldcw 4(%rsp)\n"
    "  addq $8, %rsp\n"
    "  popq %r15\n"
    "  popq %r14\n"
    "  popq %r13\n"
    "  popq %r12\n"
    "  popq %rbx\n"
    "  popq %rbp\n"
    "  ret\n"
    ".p2align 4\n"
    MPS_OPS_EMU_SYM_DECL(mps_ops_emu_fiber_start)
    MPS_OPS_EMU_SYM(mps_ops_emu_fiber_start) ":\n"
    "  movq %r12, %rdi\n"
    "  callq *%r13\n"
    "  ud2\n");

namespace mps_ops_emu {

// Returns the initial stack pointer of a fiber that will run entry(argument).
inline void* fiber_stack_init(unsigned char* stack, uint64_t size, void (*entry)(void*), void* argument) {
  uint64_t* top = reinterpret_cast<uint64_t*>(
      reinterpret_cast<uintptr_t>(stack + size) & ~uintptr_t(15));
  top -= 2;  // the entry's call then sees a 16-byte aligned stack
  *--top = reinterpret_cast<uint64_t>(&mps_ops_emu_fiber_start);  // return address
  *--top = 0;                                           // rbp
  *--top = 0;                                           // rbx
  *--top = reinterpret_cast<uint64_t>(argument);        // r12
  *--top = reinterpret_cast<uint64_t>(entry);           // r13
  *--top = 0;                                           // r14
  *--top = 0;                                           // r15
  uint32_t mxcsr;
  uint16_t fpu_control;
  __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
  __asm__ volatile("fnstcw %0" : "=m"(fpu_control));
  *--top = uint64_t(mxcsr) | (uint64_t(fpu_control) << 32);
  return top;
}

}  // namespace mps_ops_emu

#elif defined(__aarch64__)


// Frame (160 bytes, low to high): x19..x28, x29 (fp), x30 (lr), d8..d15, fpcr.
__asm__(
    ".text\n"
    ".p2align 4\n"
    MPS_OPS_EMU_SYM_DECL(mps_ops_emu_switch)
    MPS_OPS_EMU_SYM(mps_ops_emu_switch) ":\n"
    "  sub sp, sp, #176\n"
    "  stp x19, x20, [sp, #0]\n"
    "  stp x21, x22, [sp, #16]\n"
    "  stp x23, x24, [sp, #32]\n"
    "  stp x25, x26, [sp, #48]\n"
    "  stp x27, x28, [sp, #64]\n"
    "  stp x29, x30, [sp, #80]\n"
    "  stp d8, d9, [sp, #96]\n"
    "  stp d10, d11, [sp, #112]\n"
    "  stp d12, d13, [sp, #128]\n"
    "  stp d14, d15, [sp, #144]\n"
    "  mrs x9, fpcr\n"
    "  str x9, [sp, #160]\n"
    "  mov x9, sp\n"
    "  str x9, [x0]\n"
    "  mov sp, x1\n"
    "  ldr x9, [sp, #160]\n"
    "  msr fpcr, x9\n"
    "  ldp x19, x20, [sp, #0]\n"
    "  ldp x21, x22, [sp, #16]\n"
    "  ldp x23, x24, [sp, #32]\n"
    "  ldp x25, x26, [sp, #48]\n"
    "  ldp x27, x28, [sp, #64]\n"
    "  ldp x29, x30, [sp, #80]\n"
    "  ldp d8, d9, [sp, #96]\n"
    "  ldp d10, d11, [sp, #112]\n"
    "  ldp d12, d13, [sp, #128]\n"
    "  ldp d14, d15, [sp, #144]\n"
    "  add sp, sp, #176\n"
    "  ret\n"
    ".p2align 4\n"
    MPS_OPS_EMU_SYM_DECL(mps_ops_emu_fiber_start)
    MPS_OPS_EMU_SYM(mps_ops_emu_fiber_start) ":\n"
    "  mov x0, x19\n"
    "  blr x20\n"
    "  brk #1\n");

namespace mps_ops_emu {

inline void* fiber_stack_init(unsigned char* stack, uint64_t size, void (*entry)(void*), void* argument) {
  uint64_t* top = reinterpret_cast<uint64_t*>(
      reinterpret_cast<uintptr_t>(stack + size) & ~uintptr_t(15));
  top -= 22;  // the 176-byte frame
  for (int i = 0; i < 22; ++i) top[i] = 0;
  top[0] = reinterpret_cast<uint64_t>(argument);                   // x19
  top[1] = reinterpret_cast<uint64_t>(entry);                      // x20
  top[11] = reinterpret_cast<uint64_t>(&mps_ops_emu_fiber_start);  // x30 (lr)
  uint64_t fpcr;
  __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
  top[20] = fpcr;
  return top;
}

}  // namespace mps_ops_emu

#else
#error "mps_ops emulator: fibers are written for x86-64 and AArch64 only"
#endif
